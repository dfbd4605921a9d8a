// Tests for llm/ on the shape corpus: each server's documented tool call, reasoning and whole
// answers in tests/data/ (sources in each folder's README.txt) decoded into their parts, streams
// whole and split at every byte boundary. llm_parts_test.cpp has the Responses, Messages and
// embeddings shapes and vLLM's streamed reasoning and tool calls.
#include <catch2/catch.hpp>

#include "llm/llm.hpp"
#include "tests/llm_samples.hpp"

using namespace retrace;
using namespace retrace::llm;
using namespace retrace::testing;

TEST_CASE("SGLang reasoning deltas are the reasoning part and its top-level usage reasoning_tokens count") {
  const std::string body = read_data("sglang/chat-stream-reasoning.sse");
  const Exchange exchange = decode_split(body, Dialect::openai_chat);
  CHECK(exchange.decode_note == "");
  CHECK(exchange.error.kind == ErrorKind::none);
  REQUIRE(parts_of(exchange) == std::vector<Part>{Part::reasoning, Part::content});
  CHECK(choice_text(part(exchange, Part::reasoning)) == "Okay, the user asks what 1+3 is.");
  CHECK(part(exchange, Part::reasoning).tokens.size() == 11);
  CHECK(choice_text(part(exchange, Part::content)) == "1 + 3 = 4.");
  CHECK(part(exchange, Part::content).tokens.size() == 6);
  CHECK(part(exchange, Part::content).finish_reason == "stop");
  CHECK(exchange.usage.completion_tokens == 19);
  CHECK(exchange.usage.reasoning_tokens == 11);
  require_same_at_every_split(body, Dialect::openai_chat);
}

TEST_CASE("SGLang streamed tool calls name the function once and carry the arguments in pieces") {
  const std::string body = read_data("sglang/chat-stream-tool-calls.sse");
  const Exchange exchange = decode_split(body, Dialect::openai_chat);
  CHECK(exchange.decode_note == "");
  REQUIRE(parts_of(exchange) == std::vector<Part>{Part::content, Part::tool_call});
  const Choice& call = part(exchange, Part::tool_call, 0);
  CHECK(call.tool_name == "get_current_weather");
  CHECK(choice_text(call) == R"({"location": "Tokyo", "unit": "celsius"})");
  CHECK(call.tokens.size() == 5);  // the first delta's empty arguments are no token
  CHECK(call.finish_reason == "tool_calls");
  require_same_at_every_split(body, Dialect::openai_chat);
}

TEST_CASE("TGI's chat stream is text deltas then a usage chunk with no choices") {
  const std::string body = read_data("tgi/chat-stream.sse");
  const Exchange exchange = decode_split(body, Dialect::openai_chat);
  CHECK(exchange.decode_note == "");
  CHECK(exchange.error.kind == ErrorKind::none);
  REQUIRE(parts_of(exchange) == std::vector<Part>{Part::content});
  CHECK(choice_text(exchange.choices[0]) == "OK!");
  CHECK(exchange.choices[0].tokens.size() == 2);  // the last, empty delta carries only the finish reason
  CHECK(exchange.choices[0].finish_reason == "stop");
  CHECK(exchange.usage.prompt_tokens == 39);
  CHECK(exchange.usage.completion_tokens == 3);
  require_same_at_every_split(body, Dialect::openai_chat);
}

TEST_CASE("TGI's chat stream of a tool call repeats the id and index and names the function once") {
  const std::string body = read_data("tgi/chat-stream-tool-calls.sse");
  const Exchange exchange = decode_split(body, Dialect::openai_chat);
  CHECK(exchange.decode_note == "");
  CHECK(exchange.error.kind == ErrorKind::none);  // no finish reason, but the stream ends with [DONE]
  REQUIRE(parts_of(exchange) == std::vector<Part>{Part::content, Part::tool_call});
  CHECK(choice_text(part(exchange, Part::content)) == "");
  const Choice& call = part(exchange, Part::tool_call, 0);
  CHECK(call.tool_name == "get_current_weather");
  CHECK(choice_text(call) == R"({ "location": "Brooklyn, NY", "format": "fahrenheit"})");
  CHECK(call.tokens.size() == 17);
  require_same_at_every_split(body, Dialect::openai_chat);
}

TEST_CASE("Whole chat answers with tool calls decode alike from OpenAI TGI and vLLM") {
  const Exchange openai = decode_body(read_data("openai/chat-nonstream-tool-calls.json"), Dialect::openai_chat);
  CHECK(openai.decode_note == "");
  REQUIRE(parts_of(openai) == std::vector<Part>{Part::content, Part::tool_call});
  CHECK(part(openai, Part::tool_call).tool_name == "get_current_weather");
  CHECK(choice_text(part(openai, Part::tool_call)) == "{\n\"location\": \"Boston, MA\"\n}");
  CHECK(part(openai, Part::tool_call).finish_reason == "tool_calls");
  CHECK(openai.usage.completion_tokens == 17);
  CHECK(openai.usage.reasoning_tokens == 0);

  const Exchange tgi = decode_body(read_data("tgi/chat-nonstream-tool-calls.json"), Dialect::openai_chat);
  CHECK(tgi.decode_note == "");
  REQUIRE(parts_of(tgi) == std::vector<Part>{Part::content, Part::tool_call});  // TGI writes no "content"
  CHECK(part(tgi, Part::tool_call).tool_name == "get_current_weather");
  CHECK(choice_text(part(tgi, Part::tool_call)) == R"({"location":"Brooklyn, NY","format":"fahrenheit"})");
  CHECK(tgi.usage.total_tokens == 530);

  const Exchange vllm = decode_body(read_data("vllm/chat-nonstream-tool-calls.json"), Dialect::openai_chat);
  CHECK(vllm.decode_note == "");
  REQUIRE(parts_of(vllm) == std::vector<Part>{Part::reasoning, Part::content, Part::tool_call, Part::tool_call});
  CHECK(choice_text(part(vllm, Part::reasoning)) == "The user wants the weather and the time in Paris.");
  CHECK(part(vllm, Part::tool_call, 0).tool_name == "get_weather");
  CHECK(choice_text(part(vllm, Part::tool_call, 0)) == R"({"city": "Paris", "unit": "celsius"})");
  CHECK(part(vllm, Part::tool_call, 1).tool_name == "get_time");
  CHECK(part(vllm, Part::tool_call, 1).finish_reason == "tool_calls");
}

TEST_CASE("The decoder keeps each call's id, streamed once or whole, for live sessions") {
  ResponseDecoder streamed(Dialect::openai_chat);
  SseParser parser;
  parser.feed(read_data("sglang/chat-stream-tool-calls.sse"),
              [&](const SseEvent& event) { streamed.on_event(event.data, 0); });
  REQUIRE(streamed.tool_call_ids().size() == 1);
  CHECK(streamed.tool_call_ids()[0].id == "call_8e1d2c3b4a5f6e7d8c9b0a1f");
  ResponseDecoder whole(Dialect::openai_chat);
  whole.on_body(read_data("vllm/chat-nonstream-tool-calls.json"), 0);
  REQUIRE(whole.tool_call_ids().size() == 2);
  CHECK(whole.tool_call_ids()[1].call == 1);
  CHECK(whole.tool_call_ids()[1].id == "chatcmpl-tool-77b0");
  whole.reset(Dialect::openai_chat);
  CHECK(whole.tool_call_ids().empty());
}

TEST_CASE("Completions with echo and logprobs keep every token's logprob but the first prompt token's") {
  // lm-eval's loglikelihood request: the prompt echoed with its logprobs, the first one null.
  const Exchange exchange =
      decode_body(read_data("vllm/completions-nonstream-echo-logprobs.json"), Dialect::openai_completions);
  CHECK(exchange.decode_note == "");
  REQUIRE(exchange.choices.size() == 1);
  const Choice& echoed = exchange.choices[0];
  CHECK(echoed.kind == TokenKind::logprob_tokens);
  CHECK(choice_text(echoed) == "The capital of France is Paris");
  REQUIRE(echoed.tokens.size() == 6);
  CHECK_FALSE(echoed.tokens[0].has_logprob);
  CHECK(echoed.top(echoed.tokens[0]).empty());
  for (std::size_t i = 1; i < echoed.tokens.size(); ++i) {
    INFO("token " << i);
    CHECK(echoed.tokens[i].has_logprob);
    CHECK(echoed.top(echoed.tokens[i]).size() == 1);
  }
  CHECK(echoed.tokens[1].logprob == Approx(-7.3125));
  CHECK(echoed.tokens[5].bytes == " Paris");
}
