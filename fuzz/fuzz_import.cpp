// `retrace import` on arbitrary bytes, as JSONL and as OpenAI Batch input (the first byte
// chooses): a trace or a TraceError naming the line; never a crash, never a partial output file.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "format/import.hpp"
#include "fuzz/memory_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  retrace::fuzz::MemoryFile input(data + 1, size - 1);
  static const auto out = std::filesystem::temp_directory_path() /
                          ("retrace-fuzz-import-" + std::to_string(::getpid()) + ".rtrace");
  retrace::ImportOptions options;
  options.from = data[0] % 2 ? "openai-batch" : "jsonl";
  options.endpoint = data[0] % 4 < 2 ? "chat" : "completions";
  bool written = false;
  try {
    retrace::import_dataset(input.path(), out, options);
    written = true;
  } catch (const retrace::TraceError&) {
  } catch (const std::invalid_argument&) {
  }
  if (!written && std::filesystem::exists(out)) std::abort();  // a failed import leaves nothing
  std::filesystem::remove(out);
  return 0;
}
