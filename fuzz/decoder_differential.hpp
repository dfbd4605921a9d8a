// The differential check fuzz_decoder runs on each input, shared with the unit test that replays
// the fuzz corpora through it (tests/llm_fast_equivalence_test.cpp): every dialect's decoder on arbitrary
// bytes, as a whole body and as a stream of SSE events, with the fast path on and off; both paths
// must decode the same. The first byte picks the dialect, streamed or not, and whether each event
// is wrapped as a choice's "logprobs" value (so the fuzzer spends its time inside the fast path's
// logprobs reader; fuzz.sh seeds that mode with both OpenAI shapes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "format/trace.hpp"
#include "llm/llm.hpp"

namespace retrace::fuzzing {

// What a decoder with the fast path on or off makes of what `feed` gives it; `fast_events`, when
// given, says how many events the fast path took.
template <class Feed>
Exchange decode_with(llm::Dialect dialect, bool fast, bool streamed, Feed feed, std::size_t* fast_events = nullptr) {
  llm::ResponseDecoder decoder(dialect, fast);
  feed(decoder);
  Exchange out;
  // A 200 response, so that finish() also classifies failures (server_error, truncated): both
  // paths must agree on those too.
  out.response.status = 200;
  out.response.streamed = streamed;
  decoder.finish(out);
  if (fast_events) *fast_events = decoder.fast_path_events();
  return out;
}

inline Exchange decode_both_ways(llm::Dialect dialect, bool fast, bool streamed, std::string_view bytes,
                                 const std::vector<std::string>& events) {
  return decode_with(dialect, fast, streamed, [&](llm::ResponseDecoder& decoder) {
    if (streamed) {
      std::int64_t offset = 0;
      for (const auto& data : events) decoder.on_event(data, offset += 1000);
    } else {
      decoder.on_body(bytes, 1000);
    }
  });
}

// True when the fast and the general path decode `data` alike.
inline bool decoders_agree(const std::uint8_t* data, std::size_t size) {
  using llm::Dialect;
  if (size == 0) return true;
  const Dialect dialects[] = {Dialect::unknown,          Dialect::openai_completions, Dialect::openai_chat,
                              Dialect::llamacpp_completion, Dialect::tgi_generate,    Dialect::openai_responses,
                              Dialect::anthropic_messages, Dialect::openai_embeddings};
  constexpr unsigned kDialects = sizeof dialects / sizeof dialects[0];
  const Dialect dialect = dialects[data[0] % kDialects];
  const bool streamed = (data[0] / kDialects) % 2 == 1;
  const bool as_logprobs = (data[0] / (2 * kDialects)) % 2 == 1;
  std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::vector<std::string> events;
  llm::SseParser parser;
  parser.feed(bytes, [&](const llm::SseEvent& event) { events.emplace_back(event.data); });
  // Also every line as one event's data: most inputs are JSON, not SSE.
  for (std::size_t start = 0; start < bytes.size();) {
    auto end = bytes.find('\n', start);
    if (end == std::string_view::npos) end = bytes.size();
    events.emplace_back(bytes.substr(start, end - start));
    start = end + 1;
  }
  if (as_logprobs) {
    for (std::string& event : events) {
      event = (dialect == Dialect::openai_chat ? R"({"choices":[{"index":0,"delta":{"content":"a\u00e9b"},"logprobs":)"
                                               : R"({"choices":[{"index":0,"text":"a\u00e9b","logprobs":)") +
              event + "}]}";
    }
  }
  return decode_both_ways(dialect, true, streamed, bytes, events) ==
         decode_both_ways(dialect, false, streamed, bytes, events);
}

}  // namespace retrace::fuzzing
