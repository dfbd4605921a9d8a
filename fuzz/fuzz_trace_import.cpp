// `retrace import --from mooncake|bailian|azure|burstgpt|sharegpt` on arbitrary bytes (the first
// byte chooses the format, or auto-detection): a trace, or a TraceError naming the line; never a
// crash, never a partial output file. Compressed input is detected by its magic bytes, so gzip and
// zstd inputs are reached too.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "dataset/trace_import.hpp"
#include "fuzz/memory_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  retrace::fuzz::MemoryFile input(data + 1, size - 1);
  static const auto out = std::filesystem::temp_directory_path() /
                          ("retrace-fuzz-trace-import-" + std::to_string(::getpid()) + ".rtrace");
  const auto& formats = retrace::trace_formats();
  retrace::TraceImportOptions options;
  options.endpoint = data[0] & 0x80 ? "completions" : "chat";
  bool written = false;
  try {
    std::size_t choice = data[0] & 0x7f;
    options.from = choice < formats.size() ? std::string(formats[choice])
                                           : retrace::detect_import_format(input.path());
    if (!retrace::is_trace_format(options.from)) return 0;  // jsonl/batch: fuzz_import's job
    retrace::import_trace(input.path(), out, options);
    written = true;
  } catch (const retrace::TraceError&) {
  }
  if (!written && std::filesystem::exists(out)) std::abort();  // a failed import leaves nothing
  std::filesystem::remove(out);
  return 0;
}
