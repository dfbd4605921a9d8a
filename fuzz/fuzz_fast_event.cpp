// The fast path of streamed events (llm/fast_event.cpp) on one event's bytes given exactly,
// against the general (Boost.JSON DOM) path: the same tokens, parts, usage, notes and errors. The
// input is copied into a buffer of its own size, so ASan sees any read past the event; it is
// decoded alone, framed as SSE twice with keep-alive comments after (feed_sse's framing in place),
// and as a whole answer. The first byte picks chat or completions.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include "fuzz/decoder_differential.hpp"

namespace {
using retrace::llm::Dialect;
using retrace::llm::ResponseDecoder;

template <class Feed>
void same(Dialect dialect, bool streamed, Feed feed) {
  using retrace::fuzzing::decode_with;
  if (!(decode_with(dialect, true, streamed, feed) == decode_with(dialect, false, streamed, feed))) std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const Dialect dialect = data[0] % 2 == 0 ? Dialect::openai_chat : Dialect::openai_completions;
  const std::size_t length = size - 1;
  const std::unique_ptr<char[]> exact(new char[length == 0 ? 1 : length]);
  std::copy(data + 1, data + size, exact.get());
  const std::string_view event(exact.get(), length);
  same(dialect, true, [&](ResponseDecoder& decoder) { decoder.on_event(event, 1000); });
  same(dialect, false, [&](ResponseDecoder& decoder) { decoder.on_body(event, 1000); });
  if (event.find_first_of("\r\n") != std::string_view::npos) return 0;  // not one data line
  const std::string framed = "data: " + std::string(event) + "\n\ndata: " + std::string(event) + "\n\n" +
                             std::string(40, ':') + "\n\n" + std::string(40, ':') + "\n\n";
  const std::unique_ptr<char[]> stream(new char[framed.size()]);
  std::copy(framed.begin(), framed.end(), stream.get());
  same(dialect, true, [&](ResponseDecoder& decoder) {
    retrace::llm::SseParser parser;
    retrace::llm::feed_sse(parser, std::string_view(stream.get(), framed.size()), 1000, &decoder, nullptr);
  });
  return 0;
}
