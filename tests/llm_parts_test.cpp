// Tests for llm/: every part of an output its own token stream (format/trace.hpp), in each dialect
// that has parts — chat reasoning and tool calls, the Responses API, the Messages API, embeddings —
// on the documented byte shapes in tests/data/ (sources in each folder's README.txt), each
// stream decoded whole and split at every byte boundary.
#include <catch2/catch.hpp>

#include <boost/json.hpp>

#include "llm/llm.hpp"
#include "tests/llm_samples.hpp"

using namespace retrace;
using namespace retrace::llm;
using namespace retrace::testing;

TEST_CASE("vLLM reasoning deltas are a reasoning part before the answer with usage reasoning tokens") {
  const std::string body = read_data("vllm/chat-stream-reasoning.sse");
  const Exchange exchange = decode_split(body, Dialect::openai_chat);
  CHECK(exchange.decode_note == "");
  REQUIRE(parts_of(exchange) == std::vector<Part>{Part::reasoning, Part::content});
  CHECK(choice_text(part(exchange, Part::reasoning)) == "Okay, the user asks for 6*7.");
  CHECK(choice_text(part(exchange, Part::content)) == " The answer is 42.");
  CHECK(part(exchange, Part::reasoning).tokens.size() == 9);
  CHECK(part(exchange, Part::reasoning).finish_reason == "stop");
  CHECK(part(exchange, Part::content).finish_reason == "stop");
  CHECK(exchange.usage.reasoning_tokens == 9);
  CHECK(exchange.usage.completion_tokens == 20);
  // The answer's first token arrives after every reasoning token.
  CHECK(part(exchange, Part::content).tokens.front().offset_ns > part(exchange, Part::reasoning).tokens.back().offset_ns);
  require_same_at_every_split(body, Dialect::openai_chat);
}

TEST_CASE("Streamed chat tool calls are one part each with the name apart from the arguments") {
  const std::string body = read_data("vllm/chat-stream-tool-calls.sse");
  const Exchange exchange = decode_split(body, Dialect::openai_chat);
  CHECK(exchange.decode_note == "");
  REQUIRE(parts_of(exchange) == std::vector<Part>{Part::content, Part::tool_call, Part::tool_call});
  CHECK(choice_text(part(exchange, Part::content)) == "");
  CHECK(part(exchange, Part::tool_call, 0).tool_name == "get_weather");
  CHECK(choice_text(part(exchange, Part::tool_call, 0)) == R"({"city": "Paris", "unit": "celsius"})");
  CHECK(part(exchange, Part::tool_call, 1).tool_name == "get_time");
  CHECK(choice_text(part(exchange, Part::tool_call, 1)) == R"({"city": "Paris"})");
  CHECK(part(exchange, Part::tool_call, 1).finish_reason == "tool_calls");
  require_same_at_every_split(body, Dialect::openai_chat);
}

TEST_CASE("A whole chat message keeps reasoning content refusal and tool calls apart") {
  const std::string body = R"({"choices":[{"index":0,"message":{"role":"assistant","reasoning":"think",)"
                           R"("content":"f","refusal":null,"tool_calls":[{"id":"c1","type":"function",)"
                           R"("function":{"name":"f","arguments":"{\"a\":1}"}}]},"finish_reason":"tool_calls"}],)"
                           R"("usage":{"prompt_tokens":3,"completion_tokens":7,"total_tokens":10}})";
  const Exchange exchange = decode_body(body, Dialect::openai_chat);
  REQUIRE(parts_of(exchange) == std::vector<Part>{Part::reasoning, Part::content, Part::tool_call});
  CHECK(choice_text(part(exchange, Part::reasoning)) == "think");
  CHECK(choice_text(part(exchange, Part::content)) == "f");
  CHECK(part(exchange, Part::tool_call).tool_name == "f");
  CHECK(choice_text(part(exchange, Part::tool_call)) == R"({"a":1})");
  CHECK(exchange.usage.reasoning_tokens == -1);
}

TEST_CASE("Chat logprobs go with the part whose text the delta carries") {
  const std::string event =
      R"({"choices":[{"index":0,"delta":{"reasoning_content":"Hm"},"logprobs":{"content":[)"
      R"({"token":"Hm","logprob":-0.1,"bytes":[72,109],"top_logprobs":[]}]},"finish_reason":null}]})";
  ResponseDecoder decoder(Dialect::openai_chat);
  decoder.on_event(event, 10);
  decoder.on_event(R"({"choices":[{"index":0,"delta":{"content":"Yes"},"finish_reason":"stop"}]})", 20);
  Exchange exchange;
  decoder.finish(exchange);
  REQUIRE(parts_of(exchange) == std::vector<Part>{Part::reasoning, Part::content});
  CHECK(part(exchange, Part::reasoning).kind == TokenKind::logprob_tokens);
  CHECK(part(exchange, Part::reasoning).tokens.front().has_logprob);
  CHECK(part(exchange, Part::content).kind == TokenKind::text_deltas);
}

TEST_CASE("Logprobs of a whole message are dealt out to reasoning and answer by their bytes") {
  // vLLM's whole answer with a reasoning parser: one logprobs list for every generated token.
  const std::string body =
      R"({"choices":[{"index":0,"message":{"role":"assistant","reasoning_content":"Hm, ok","content":". Yes"},)"
      R"("logprobs":{"content":[{"token":"Hm","logprob":-0.1,"bytes":[72,109],"top_logprobs":[]},)"
      R"({"token":", ok.","logprob":-0.2,"bytes":[44,32,111,107,46],"top_logprobs":[]},)"
      R"({"token":" Yes","logprob":-0.3,"bytes":[32,89,101,115],"top_logprobs":[]}]},"finish_reason":"stop"}]})";
  const Exchange exchange = decode_body(body, Dialect::openai_chat);
  REQUIRE(parts_of(exchange) == std::vector<Part>{Part::reasoning, Part::content});
  const Choice& reasoning = part(exchange, Part::reasoning);
  const Choice& answer = part(exchange, Part::content);
  CHECK(choice_text(reasoning) == "Hm, ok");
  CHECK(choice_text(answer) == ". Yes");
  REQUIRE(reasoning.tokens.size() == 2);
  CHECK(reasoning.tokens[1].logprob == Approx(-0.2));  // the straddling token keeps its logprob here
  REQUIRE(answer.tokens.size() == 2);
  CHECK(answer.tokens[0].bytes == ".");
  CHECK_FALSE(answer.tokens[0].has_logprob);
  CHECK(answer.tokens[1].bytes == " Yes");
  CHECK(answer.tokens[1].has_logprob);
}

TEST_CASE("The Responses API stream decodes reasoning answer and function call parts") {
  const std::string body = read_data("openai/responses-stream.sse");
  CHECK(detect_dialect("/v1/responses", "{}") == Dialect::openai_responses);
  const Exchange exchange = decode_split(body, Dialect::openai_responses);
  CHECK(exchange.decode_note == "");
  REQUIRE(parts_of(exchange) == std::vector<Part>{Part::reasoning, Part::content, Part::tool_call});
  CHECK(choice_text(part(exchange, Part::reasoning)) == "The user wants weather.");
  CHECK(choice_text(part(exchange, Part::content)) == "Let me check.");
  CHECK(part(exchange, Part::tool_call).tool_name == "get_weather");
  CHECK(choice_text(part(exchange, Part::tool_call)) == R"({"city":"Paris"})");
  CHECK(part(exchange, Part::content).finish_reason == "completed");
  CHECK(exchange.usage.prompt_tokens == 18);
  CHECK(exchange.usage.completion_tokens == 14);
  CHECK(exchange.usage.total_tokens == 32);
  CHECK(exchange.usage.reasoning_tokens == 5);
  require_same_at_every_split(body, Dialect::openai_responses);
}

TEST_CASE("A whole Responses API object decodes to the same parts as its stream") {
  const Exchange streamed = decode_split(read_data("openai/responses-stream.sse"), Dialect::openai_responses);
  const Exchange whole = decode_body(read_data("openai/responses-nonstream.json"), Dialect::openai_responses);
  CHECK(whole.decode_note == "");
  REQUIRE(parts_of(whole) == parts_of(streamed));
  for (std::size_t i = 0; i < whole.choices.size(); ++i) {
    CHECK(choice_text(whole.choices[i]) == choice_text(streamed.choices[i]));
    CHECK(whole.choices[i].tool_name == streamed.choices[i].tool_name);
    CHECK(whole.choices[i].finish_reason == streamed.choices[i].finish_reason);
  }
  CHECK(whole.usage == streamed.usage);
}

TEST_CASE("Older vLLM reasoning deltas given as an object still reach the reasoning part") {
  ResponseDecoder decoder(Dialect::openai_responses);
  decoder.on_event(R"({"type":"response.reasoning.delta","delta":{"content":"We"},"sequence_number":4})", 10);
  decoder.on_event(R"({"type":"response.output_text.delta","output_index":1,"delta":"Hi"})", 20);
  decoder.on_event(R"({"type":"response.incomplete","response":{"status":"incomplete",)"
                   R"("incomplete_details":{"reason":"max_output_tokens"}}})", 30);
  CHECK(decoder.finished());
  Exchange exchange;
  decoder.finish(exchange);
  CHECK(choice_text(part(exchange, Part::reasoning)) == "We");
  CHECK(choice_text(part(exchange, Part::content)) == "Hi");
  CHECK(part(exchange, Part::content).finish_reason == "max_output_tokens");
}

TEST_CASE("The Messages API text stream of the documentation decodes with its usage") {
  const std::string body = read_data("anthropic/messages-stream-text.sse");
  CHECK(detect_dialect("/v1/messages", "{}") == Dialect::anthropic_messages);
  const Exchange exchange = decode_split(body, Dialect::anthropic_messages);
  CHECK(exchange.decode_note == "");
  REQUIRE(parts_of(exchange) == std::vector<Part>{Part::content});
  CHECK(choice_text(exchange.choices[0]) == "Hello!");
  CHECK(exchange.choices[0].finish_reason == "end_turn");
  CHECK(exchange.usage.prompt_tokens == 25);
  CHECK(exchange.usage.completion_tokens == 15);
  CHECK(exchange.usage.total_tokens == 40);
  require_same_at_every_split(body, Dialect::anthropic_messages);
}

TEST_CASE("Messages API thinking deltas are the reasoning part and the signature is not text") {
  const std::string body = read_data("anthropic/messages-stream-thinking.sse");
  const Exchange exchange = decode_split(body, Dialect::anthropic_messages);
  CHECK(exchange.decode_note == "");
  REQUIRE(parts_of(exchange) == std::vector<Part>{Part::reasoning, Part::content});
  CHECK(choice_text(part(exchange, Part::reasoning)) ==
        "Let me solve this step by step:\n\n1. First break down 27 * 453\n2. 453 = 400 + 50 + 3");
  CHECK(choice_text(part(exchange, Part::content)) == "27 * 453 = 12,231");
  require_same_at_every_split(body, Dialect::anthropic_messages);
}

TEST_CASE("Messages API input_json_delta builds the tool call arguments") {
  const std::string body = read_data("anthropic/messages-stream-tool.sse");
  const Exchange exchange = decode_split(body, Dialect::anthropic_messages);
  CHECK(exchange.decode_note == "");
  REQUIRE(parts_of(exchange) == std::vector<Part>{Part::content, Part::tool_call});
  CHECK(part(exchange, Part::tool_call).tool_name == "json");
  CHECK(choice_text(part(exchange, Part::tool_call)) ==
        R"({"elements": [{"location": "San Francisco", "temperature": 58, "condition": "sunny"}]})");
  CHECK(part(exchange, Part::tool_call).finish_reason == "tool_use");
  CHECK(exchange.usage.completion_tokens == 47);
  require_same_at_every_split(body, Dialect::anthropic_messages);
}

TEST_CASE("A whole Messages API message keeps thinking text and tool use apart") {
  const Exchange exchange = decode_body(read_data("anthropic/messages-nonstream.json"), Dialect::anthropic_messages);
  CHECK(exchange.decode_note == "");
  REQUIRE(parts_of(exchange) == std::vector<Part>{Part::reasoning, Part::content, Part::tool_call});
  CHECK(choice_text(part(exchange, Part::reasoning)) == "The user wants the weather in San Francisco.");
  CHECK(choice_text(part(exchange, Part::content)) == "I'll check the weather.");
  CHECK(part(exchange, Part::tool_call).tool_name == "get_weather");
  CHECK(choice_text(part(exchange, Part::tool_call)) == R"({"location":"San Francisco, CA"})");
  CHECK(exchange.choices[0].finish_reason == "tool_use");
  CHECK(exchange.usage.prompt_tokens == 2095);
  CHECK(exchange.usage.completion_tokens == 503);
}

TEST_CASE("Embeddings decode to their values from numbers and from base64 alike") {
  CHECK(detect_dialect("/v1/embeddings", "{}") == Dialect::openai_embeddings);
  const Exchange numbers = decode_body(read_data("openai/embeddings.json"), Dialect::openai_embeddings);
  const Exchange encoded = decode_body(read_data("openai/embeddings-base64.json"), Dialect::openai_embeddings);
  CHECK(numbers.decode_note == "");
  CHECK(encoded.decode_note == "");
  REQUIRE(parts_of(numbers) == std::vector<Part>{Part::embedding});
  REQUIRE(numbers.choices[0].values == std::vector<double>{0.0023064255, -0.009327292, -0.0028842222});
  REQUIRE(encoded.choices[0].values.size() == 3);
  for (std::size_t i = 0; i < 3; ++i)
    CHECK(encoded.choices[0].values[i] == static_cast<double>(static_cast<float>(numbers.choices[0].values[i])));
  CHECK(numbers.usage.prompt_tokens == 8);
  const Exchange broken = decode_body(R"({"data":[{"index":0,"embedding":"not base64!"}]})", Dialect::openai_embeddings);
  CHECK(broken.decode_note.find("not base64 of float32") != std::string::npos);
}

TEST_CASE("A stored Messages exchange decodes from its recorded events") {
  Exchange exchange;
  exchange.request.method = "POST";
  exchange.request.target = "/v1/messages";
  exchange.request.body = R"({"model":"m","stream":true})";
  exchange.response.status = 200;
  exchange.response.streamed = true;
  exchange.response.events.push_back({100, read_data("anthropic/messages-stream-text.sse")});
  decode_exchange(exchange);
  CHECK(exchange.dialect == "anthropic_messages");
  CHECK(exchange.decode_note == "");
  REQUIRE(exchange.choices.size() == 1);
  CHECK(choice_text(exchange.choices[0]) == "Hello!");
}
