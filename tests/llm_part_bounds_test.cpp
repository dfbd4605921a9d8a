// Tests for llm/'s one bound on a response's outputs (decoder_impl.hpp, kMaxParts): answers of
// 10^5 parts in every shape that makes parts — embeddings without "index", whole Responses
// function_call items, whole and streamed Messages tool_use blocks, chat tool calls, choices —
// decode to at most 4,096 parts with one note, each part found in O(1); an index past the bound
// is refused, not placed at the next position; token totals a server did not send saturate.
// The 10^6-part answers through record and replay are tests/production/many_parts.sh.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>

#include "llm/llm.hpp"
#include "tests/llm_samples.hpp"

using namespace retrace;
using namespace retrace::llm;
using namespace retrace::testing;

namespace {

constexpr std::size_t kMany = 100'000;
constexpr std::size_t kBound = 4096;

bool has_note(const Exchange& exchange, std::string_view text) {
  return exchange.decode_note.find(text) != std::string::npos;
}

std::string repeated(std::size_t count, const std::string& first, const std::string& each, const std::string& last) {
  std::string out = first;
  out.reserve(first.size() + count * (each.size() + 1) + last.size());
  for (std::size_t i = 0; i < count; ++i) {
    if (i) out += ',';
    out += each;
  }
  return out + last;
}

}  // namespace

TEST_CASE("An embeddings answer of 10^5 entries without index keeps 4096 parts and says the rest were dropped") {
  const std::string body =
      repeated(kMany, R"({"object":"list","data":[)", R"({"embedding":[0.5,1]})", R"(],"usage":{"prompt_tokens":3}})");
  const Exchange exchange = decode_body(body, Dialect::openai_embeddings);
  REQUIRE(exchange.choices.size() == kBound);
  CHECK(exchange.choices.front().index == 0);
  CHECK(exchange.choices.back().index == kBound - 1);
  CHECK(exchange.choices.back().values == std::vector<double>{0.5, 1});
  CHECK(has_note(exchange, "more than 4096 outputs"));
}

TEST_CASE("An embedding index past the bound is refused with a note instead of taking the next position") {
  const Exchange exchange = decode_body(
      R"({"data":[{"index":0,"embedding":[1]},{"index":5000,"embedding":[2]},{"index":1,"embedding":[3]}]})",
      Dialect::openai_embeddings);
  REQUIRE(exchange.choices.size() == 2);
  CHECK(exchange.choices[1].values == std::vector<double>{3});
  CHECK(has_note(exchange, "embedding index out of range: 5000"));
}

TEST_CASE("A whole Responses answer of 10^5 function calls keeps the first calls up to the bound with their ids") {
  const std::string body = repeated(kMany, R"({"object":"response","status":"completed","output":[)",
                                    R"({"type":"function_call","call_id":"c","name":"f","arguments":"{}"})", "]}");
  ResponseDecoder decoder(Dialect::openai_responses);
  decoder.on_body(body, 5000);
  CHECK(decoder.tool_call_ids().size() == kBound - 1);  // the answer's content part is one of the parts
  Exchange exchange;
  decoder.finish(exchange);
  REQUIRE(exchange.choices.size() == kBound);
  CHECK(exchange.choices.back().part == Part::tool_call);
  CHECK(exchange.choices.back().tool_call == kBound - 2);
  CHECK(has_note(exchange, "the rest dropped"));
}

TEST_CASE("A whole Messages answer of 10^5 tool_use blocks is bounded and its usage total saturates") {
  const std::string body = repeated(
      kMany, R"({"type":"message","stop_reason":"tool_use","usage":{"input_tokens":9223372036854775807,"output_tokens":5},"content":[)",
      R"({"type":"tool_use","id":"t","name":"f","input":{}})", "]}");
  const Exchange exchange = decode_body(body, Dialect::anthropic_messages);
  REQUIRE(exchange.choices.size() == kBound);
  CHECK(has_note(exchange, "the rest dropped"));
  CHECK(exchange.usage.total_tokens == INT64_MAX);
}

TEST_CASE("A Messages stream of 10^5 tool_use blocks stops making parts at the bound") {
  std::string body = "data: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":1}}}\n\n";
  for (std::size_t i = 0; i < kMany; ++i) {
    const std::string index = std::to_string(i);
    body += "data: {\"type\":\"content_block_start\",\"index\":" + index +
            ",\"content_block\":{\"type\":\"tool_use\",\"id\":\"t" + index + "\",\"name\":\"f\"}}\n\n";
    body += "data: {\"type\":\"content_block_delta\",\"index\":" + index +
            ",\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{}\"}}\n\n";
  }
  body += "data: {\"type\":\"message_stop\"}\n\n";
  const Exchange exchange = decode_stream(body, Dialect::anthropic_messages);
  CHECK(exchange.choices.size() <= kBound);
  CHECK(exchange.choices.size() >= kBound - 1);
  CHECK(has_note(exchange, "output position missing or out of range"));
}

TEST_CASE("A chat stream of 10^5 tool calls each repeating its id records each id once and at most the bound") {
  std::string body;
  for (std::size_t i = 0; i < kMany; ++i) {
    const std::string call = std::to_string(i % 5000);
    body += R"(data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":)" + call + R"(,"id":"id)" + call +
            R"(","function":{"name":"f","arguments":"x"}}]}}]})" "\n\n";
  }
  body += "data: [DONE]\n\n";
  ResponseDecoder decoder(Dialect::openai_chat);
  SseParser parser;
  std::int64_t offset = 0;
  parser.feed(body, [&](const SseEvent& event) { decoder.on_event(event.data, offset += 1000); });
  CHECK(decoder.tool_call_ids().size() == kBound - 1);  // the choice's content part is one of the parts
  Exchange exchange;
  decoder.finish(exchange);
  REQUIRE(exchange.choices.size() == kBound);
  CHECK(exchange.choices.back().tool_call == kBound - 2);
  CHECK(exchange.choices.back().tokens.size() == kMany / 5000);  // that call's deltas, all of them
  CHECK(has_note(exchange, "more than 4096 outputs"));
}

TEST_CASE("A completions event of 10^5 choices without index keeps the bound") {
  const std::string body = repeated(kMany, R"({"choices":[)", R"({"text":"a"})", "]}");
  ResponseDecoder decoder(Dialect::openai_completions);
  decoder.on_body(body, 5000);
  Exchange exchange;
  decoder.finish(exchange);
  // Every choice without an "index" is choice 0: one part, every text in it.
  REQUIRE(exchange.choices.size() == 1);
  CHECK(exchange.choices.front().tokens.size() == kMany);
}

TEST_CASE("Token totals a server left out saturate instead of overflowing") {
  const Exchange llamacpp = decode_body(
      R"({"content":"a","stop":true,"tokens_predicted":9223372036854775807,"tokens_evaluated":9})",
      Dialect::llamacpp_completion);
  CHECK(llamacpp.usage.total_tokens == INT64_MAX);
  const Exchange tgi = decode_body(
      R"({"generated_text":"a","details":{"finish_reason":"length","generated_tokens":9223372036854775807,"input_length":9}})",
      Dialect::tgi_generate);
  CHECK(tgi.usage.total_tokens == INT64_MAX);
}
