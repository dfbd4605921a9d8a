// The trace reader on arbitrary bytes: a whole file (header, frames, index), every record read,
// then read again as replay reads it (next_request: the request side only), then as diff reads it (each record's outputs, and the record whole after them, which
// may find damage the outputs did not touch). Errors are TraceError; anything else (a crash, a sanitizer report, an allocation past
// libFuzzer's -rss_limit_mb) is a finding.
#include <cstddef>
#include <cstdint>

#include "format/trace.hpp"
#include "fuzz/memory_file.hpp"
#include "llm/derive_tokens.hpp"

// Format 1.7's derived tokens are rebuilt by the decoder, as in every program that reads traces.
static const bool kTokenDeriverInstalled = (retrace::llm::install_token_deriver(), true);

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  retrace::fuzz::MemoryFile file(data, size);
  try {
    retrace::TraceReader reader(file.path());
    retrace::Exchange exchange;
    while (reader.next(exchange)) {
    }
    (void)retrace::describe(reader.recovery());
  } catch (const retrace::TraceError&) {
  }
  try {
    retrace::TraceReader reader(file.path());
    retrace::Exchange exchange;
    while (reader.next_request(exchange)) {
    }
  } catch (const retrace::TraceError&) {
  }
  try {
    retrace::TraceReader reader(file.path());
    retrace::ExchangeOutputs outputs;
    retrace::Exchange exchange;
    while (reader.next(outputs)) {
      try {
        reader.read_last(exchange);
      } catch (const retrace::TraceError&) {
      }
    }
    (void)retrace::describe(reader.recovery());
  } catch (const retrace::TraceError&) {
  }
  return 0;
}
