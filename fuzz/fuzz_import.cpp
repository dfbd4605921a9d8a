// `retrace import` on arbitrary bytes, as JSONL, as OpenAI Batch input and as `retrace export`
// lines (the first byte chooses): a trace or a TraceError naming the line; never a crash, never a
// partial output file.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "dataset/import.hpp"
#include "fuzz/memory_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  retrace::fuzz::MemoryFile input(data + 1, size - 1);
  static const auto out = std::filesystem::temp_directory_path() /
                          ("retrace-fuzz-import-" + std::to_string(::getpid()) + ".rtrace");
  retrace::ImportOptions options;
  const char* formats[] = {"jsonl", "openai-batch", "export"};
  options.from = formats[data[0] % 3];
  options.endpoint = data[0] % 6 < 3 ? "chat" : "completions";
  bool written = false;
  try {
    if (options.from == "export")
      retrace::import_export_lines(input.path(), out, options);
    else
      retrace::import_dataset(input.path(), out, options);
    written = true;
  } catch (const retrace::TraceError&) {
  } catch (const std::invalid_argument&) {
  }
  if (!written && std::filesystem::exists(out)) std::abort();  // a failed import leaves nothing
  std::filesystem::remove(out);
  return 0;
}
