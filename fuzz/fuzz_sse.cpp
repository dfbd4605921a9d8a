// SSE framing on arbitrary bytes, fed whole and in two pieces split where the first byte says:
// both ways must give the same events (framing must not depend on how reads split the stream;
// only the raw bytes of a \r\n split between reads may land in the next event, as llm.hpp
// says), and every byte must be in exactly one event's raw bytes or in the partial tail, in order.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "llm/llm.hpp"

namespace {
struct Framed {
  std::vector<std::pair<std::string, std::string>> events;  // data, event name
  std::string bytes;                                        // every raw, then the partial tail
};

Framed frame(std::string_view bytes, std::size_t split) {
  Framed out;
  retrace::llm::SseParser parser;
  auto on_event = [&](const retrace::llm::SseEvent& event) {
    out.events.emplace_back(std::string(event.data), std::string(event.event));
    out.bytes += event.raw;
  };
  parser.feed(bytes.substr(0, split), on_event);
  parser.feed(bytes.substr(split), on_event);
  out.bytes += parser.take_partial();
  return out;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::size_t split = data[0] % (bytes.size() + 1);
  auto whole = frame(bytes, bytes.size());
  auto split_in_two = frame(bytes, split);
  if (whole.events != split_in_two.events) std::abort();
  if (whole.bytes != bytes || split_in_two.bytes != bytes) std::abort();
  return 0;
}
