// What the llm/ tests share: SSE fed in pieces, and responses decoded the way the recorder decodes
// them (tests/llm_*_test.cpp).
#pragma once

#include <catch2/catch.hpp>

#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json.hpp>

#include "llm/llm.hpp"
#include "tests/test_data.hpp"

namespace retrace::testing {

struct ParsedEvent {
  std::string raw;
  std::string data;
  std::string event;
  bool operator==(const ParsedEvent&) const = default;
};

// Feeds `input` in pieces cut at `cuts` (sorted offsets); returns the events and the partial tail.
inline std::vector<ParsedEvent> parse_in_pieces(std::string_view input, const std::vector<std::size_t>& cuts,
                                         std::string* partial = nullptr) {
  llm::SseParser parser;
  std::vector<ParsedEvent> events;
  std::size_t from = 0;
  auto on_event = [&](const llm::SseEvent& event) {
    events.push_back({std::string(event.raw), std::string(event.data), std::string(event.event)});
  };
  for (std::size_t cut : cuts) {
    parser.feed(input.substr(from, cut - from), on_event);
    from = cut;
  }
  parser.feed(input.substr(from), on_event);
  const std::string tail = parser.take_partial();
  if (partial) *partial = tail;
  return events;
}

inline std::string concatenated_raws(const std::vector<ParsedEvent>& events) {
  std::string all;
  for (const ParsedEvent& event : events) all += event.raw;
  return all;
}

// Decodes an SSE body the way the recorder does: SSE events into a ResponseDecoder.
inline Exchange decode_stream(std::string_view body, llm::Dialect dialect) {
  llm::ResponseDecoder decoder(dialect);
  llm::SseParser parser;
  std::int64_t offset = 0;
  parser.feed(body, [&](const llm::SseEvent& event) { decoder.on_event(event.data, offset += 1000); });
  Exchange exchange;
  decoder.finish(exchange);
  CHECK(decoder.finished());
  return exchange;
}

inline Exchange decode_body(std::string_view body, llm::Dialect dialect) {
  llm::ResponseDecoder decoder(dialect);
  decoder.on_body(body, 5000);
  Exchange exchange;
  decoder.finish(exchange);
  return exchange;
}

// A stream decoded as the recorder decodes it, fed in two pieces cut at `cut` (npos: whole).
inline Exchange decode_split(std::string_view body, llm::Dialect dialect, std::size_t cut = std::string_view::npos) {
  llm::ResponseDecoder decoder(dialect);
  llm::SseParser parser;
  std::int64_t offset = 0;
  const auto on_event = [&](const llm::SseEvent& event) { decoder.on_event(event.data, offset += 1000); };
  if (cut == std::string_view::npos) {
    parser.feed(body, on_event);
  } else {
    parser.feed(body.substr(0, cut), on_event);
    parser.feed(body.substr(cut), on_event);
  }
  Exchange exchange;
  decoder.finish(exchange);
  return exchange;
}

// The same parts, texts and finish reasons whatever the split (offsets count events, so they agree
// too: every split completes the same events in the same order).
inline void require_same_at_every_split(const std::string& body, llm::Dialect dialect) {
  const Exchange whole = decode_split(body, dialect);
  for (std::size_t cut = 0; cut <= body.size(); ++cut) {
    const Exchange split = decode_split(body, dialect, cut);
    INFO("cut at byte " << cut);
    REQUIRE(split.choices == whole.choices);
    REQUIRE(split.usage == whole.usage);
    REQUIRE(split.decode_note == whole.decode_note);
  }
}

inline const Choice& part(const Exchange& exchange, Part which, std::uint32_t call = 0) {
  for (const Choice& choice : exchange.choices)
    if (choice.part == which && choice.tool_call == call) return choice;
  FAIL("no part " << to_string(which) << " " << call);
  throw;
}

inline std::vector<Part> parts_of(const Exchange& exchange) {
  std::vector<Part> parts;
  for (const Choice& choice : exchange.choices) parts.push_back(choice.part);
  return parts;
}

inline std::vector<std::int32_t> ids_of(const Choice& choice) {
  std::vector<std::int32_t> ids;
  for (const Token& token : choice.tokens) ids.push_back(token.id);
  return ids;
}

inline std::vector<std::int32_t> ints_of(const boost::json::array& array) {
  std::vector<std::int32_t> ids;
  for (const auto& value : array) ids.push_back(static_cast<std::int32_t>(value.as_int64()));
  return ids;
}

inline boost::json::object json_file(const std::string& relative) {
  return boost::json::parse(read_data(relative)).as_object();
}

inline std::string json_string(const boost::json::value& value) { return std::string(value.as_string()); }

// A stream exercising every framing feature: BOM, CRLF, bare CR, LF, comments, event names,
// multi-line data, "data:" without a space, a field with no colon, id/retry fields.
inline const std::string kTrickyStream =
    "\xEF\xBB\xBF"
    ": keep-alive comment\r\n"
    "data: {\"a\":1}\r\n\r\n"
    "event: delta\n"
    "data:first line\n"
    "data: second line\n"
    "id: 7\n"
    "retry: 100\n\n"
    "data: cr only\r\r"
    ": just a comment\n\n"
    "data\n\n"
    "data: [DONE]\n\n"
    "data: unterminated";

// A streamed completion of `tokens` tokens with logprobs and two alternatives each, one event a
// token, as vLLM and `retrace serve` send it.
inline std::string completion_stream(std::size_t tokens, std::mt19937_64& random) {
  std::string body;
  for (std::size_t t = 0; t < tokens; ++t) {
    const std::string word = "w" + std::to_string(random() % 50000);
    const std::string logprob = "-" + std::to_string(random() % 1000) + "." + std::to_string(random() % 997);
    body += R"(data: {"id":"cmpl-1","object":"text_completion","created":1796542049,"model":"m","choices":[{"index":0,"text":" )" +
            word + R"(","logprobs":{"tokens":[" )" + word + R"("],"token_logprobs":[)" + logprob +
            R"(],"top_logprobs":[{" )" + word + R"(":)" + logprob + R"(,"alt":-9.5}],"text_offset":[)" +
            std::to_string(t) + R"(]},"finish_reason":)" + (t + 1 == tokens ? "\"length\"" : "null") + "}]}\n\n";
  }
  return body + "data: [DONE]\n\n";
}

}  // namespace retrace::testing
