// Tests for decoding vLLM's, TGI's and OpenAI's answers (hand-written from their documented
// shapes): token ids, legacy and chat logprobs, choices, parts.
#include <catch2/catch.hpp>

#include "llm/llm.hpp"
#include "tests/llm_samples.hpp"

using namespace retrace;
using namespace retrace::llm;
using namespace retrace::testing;

// ---------------------------------------------------------------------------------------------
// vLLM (hand-written from vLLM's protocol definitions)

TEST_CASE("vLLM completions stream maps token_id strings to ids and splits coalesced text by offset") {
  const Exchange stream = decode_stream(read_data("vllm/completions-stream-token-ids.sse"), Dialect::openai_completions);
  REQUIRE(stream.choices.size() == 1);
  const Choice& choice = stream.choices[0];
  CHECK(choice.kind == TokenKind::token_ids);
  CHECK(ids_of(choice) == std::vector<std::int32_t>{12366, 374, 6419, 53050, 13});
  REQUIRE(choice.tokens.size() == 5);
  CHECK(choice.tokens[0].bytes == " Paris");
  CHECK(choice.tokens[1].bytes == " is");
  CHECK(choice.tokens[2].bytes == " nice");
  CHECK(choice.tokens[3].bytes == " café");  // text_offset counts code points, not bytes
  CHECK(choice.tokens[4].bytes == ".");
  CHECK(choice.tokens[2].offset_ns == 2000);
  CHECK(choice.tokens[2].logprob == Approx(-1.25));
  REQUIRE(choice.top(choice.tokens[1]).size() == 2);
  CHECK(choice.top(choice.tokens[1])[0].id == 374);
  CHECK(choice.top(choice.tokens[1])[1].id == 11);
  CHECK(choice.finish_reason == "stop");
  CHECK(stream.usage.prompt_tokens == 5);
  CHECK(stream.usage.completion_tokens == 5);
  CHECK(stream.decode_note.empty());
}

TEST_CASE("vLLM chat stream with logprobs and token ids keeps the delta text as token bytes") {
  const Exchange stream = decode_stream(read_data("vllm/chat-stream-token-ids.sse"), Dialect::openai_chat);
  REQUIRE(stream.choices.size() == 1);
  const Choice& choice = stream.choices[0];
  CHECK(choice.kind == TokenKind::token_ids);
  CHECK(ids_of(choice) == std::vector<std::int32_t>{9707, 0});
  CHECK(choice.tokens[0].bytes == "Hello");  // not the bytes of the string "token_id:9707"
  CHECK(choice_text(choice) == "Hello!");
  REQUIRE(choice.top(choice.tokens[0]).size() == 2);
  CHECK(choice.top(choice.tokens[0])[1].id == 13048);
  CHECK(choice.finish_reason == "stop");
  CHECK(stream.usage.total_tokens == 11);
}

TEST_CASE("vLLM completions with n=2 interleave choices by index") {
  const Exchange stream = decode_stream(read_data("vllm/completions-stream-n2.sse"), Dialect::openai_completions);
  REQUIRE(stream.choices.size() == 2);
  CHECK(stream.choices[0].index == 0);
  CHECK(stream.choices[1].index == 1);
  CHECK(choice_text(stream.choices[0]) == " red apple");
  CHECK(choice_text(stream.choices[1]) == " blue sky");
  CHECK(stream.choices[0].finish_reason == "stop");
  CHECK(stream.choices[1].finish_reason == "length");
  CHECK(stream.choices[0].kind == TokenKind::text_deltas);
  CHECK(stream.usage.completion_tokens == 4);
}

TEST_CASE("vLLM non-stream completions decode legacy logprobs - token_id strings and token_ids") {
  const Exchange legacy = decode_body(read_data("vllm/completions-nonstream-logprobs.json"), Dialect::openai_completions);
  REQUIRE(legacy.choices.size() == 1);
  CHECK(legacy.choices[0].kind == TokenKind::logprob_tokens);
  REQUIRE(legacy.choices[0].tokens.size() == 2);
  CHECK(legacy.choices[0].tokens[1].bytes == " is");
  CHECK(legacy.choices[0].top(legacy.choices[0].tokens[1])[1].bytes == ",");
  CHECK(legacy.choices[0].tokens[0].offset_ns == 5000);

  const Exchange strings = decode_body(read_data("vllm/completions-nonstream-token-id-strings.json"), Dialect::openai_completions);
  REQUIRE(strings.choices.size() == 1);
  CHECK(strings.choices[0].kind == TokenKind::token_ids);
  CHECK(ids_of(strings.choices[0]) == std::vector<std::int32_t>{53050, 7906});
  CHECK(strings.choices[0].tokens[0].bytes == " café");
  CHECK(strings.choices[0].tokens[1].bytes == " au");
  CHECK(strings.decode_note.empty());

  const Exchange ids = decode_body(read_data("vllm/completions-nonstream-token-ids.json"), Dialect::openai_completions);
  REQUIRE(ids.choices.size() == 1);
  CHECK(ids.choices[0].kind == TokenKind::token_ids);
  CHECK(ids_of(ids.choices[0]) == std::vector<std::int32_t>{12366, 374});
  CHECK(choice_text(ids.choices[0]) == " Paris is");
}

TEST_CASE("Legacy logprobs spell pieces of a character as bytes labels and decode to those bytes") {
  ResponseDecoder decoder(Dialect::openai_completions);
  decoder.on_event(R"({"choices":[{"index":0,"text":"😊","logprobs":{"tokens":["bytes:\\xf0\\x9f\\x98","bytes:\\x8a"],)"
                   R"("token_logprobs":[-0.5,-0.25],"top_logprobs":[{"bytes:\\xf0\\x9f\\x98":-0.5},{"bytes:\\x8a":-0.25}],)"
                   R"("text_offset":[0,1]}}]})",
                   1);
  decoder.on_event("[DONE]", 2);
  Exchange exchange;
  decoder.finish(exchange);
  REQUIRE(exchange.choices.size() == 1);
  REQUIRE(exchange.choices[0].tokens.size() == 2);
  CHECK(exchange.choices[0].tokens[0].bytes == "\xF0\x9F\x98");
  CHECK(exchange.choices[0].tokens[1].bytes == "\x8A");
  CHECK(exchange.choices[0].top(exchange.choices[0].tokens[1])[0].bytes == "\x8A");
  CHECK(exchange.choices[0].kind == TokenKind::logprob_tokens);
  CHECK(exchange.decode_note.empty());
}

// ---------------------------------------------------------------------------------------------
// TGI and OpenAI

TEST_CASE("TGI stream gives ids per event - drops special tokens' text and ends at its last event") {
  const Exchange stream = decode_stream(read_data("tgi/generate-stream.sse"), Dialect::tgi_generate);
  REQUIRE(stream.choices.size() == 1);  // TGI's "index" counts tokens, not choices
  const Choice& choice = stream.choices[0];
  CHECK(choice.kind == TokenKind::token_ids);
  CHECK(ids_of(choice) == std::vector<std::int32_t>{18925, 6975, 2});
  CHECK(choice_text(choice) == " Deep learning");  // as generated_text, without "</s>"
  CHECK(choice.tokens[2].has_logprob);
  REQUIRE(choice.top(choice.tokens[0]).size() == 2);
  CHECK(choice.top(choice.tokens[0])[1].bytes == " Machine");
  CHECK(choice.finish_reason == "stop");
  CHECK(stream.usage.completion_tokens == 3);
  CHECK(stream.usage.prompt_tokens == 4);
}

TEST_CASE("TGI non-stream answers give ids with details and text without") {
  const Exchange details = decode_body(read_data("tgi/generate.json"), Dialect::tgi_generate);
  REQUIRE(details.choices.size() == 1);
  CHECK(details.choices[0].kind == TokenKind::token_ids);
  CHECK(ids_of(details.choices[0]) == std::vector<std::int32_t>{18925, 6975, 374});
  CHECK(choice_text(details.choices[0]) == " Deep learning is");
  CHECK(details.choices[0].top(details.choices[0].tokens[0]).size() == 2);
  CHECK(details.choices[0].finish_reason == "length");
  CHECK(details.usage.completion_tokens == 3);

  const Exchange plain = decode_body(read_data("tgi/generate-no-details.json"), Dialect::tgi_generate);
  REQUIRE(plain.choices.size() == 1);
  CHECK(plain.choices[0].kind == TokenKind::text_deltas);
  CHECK(choice_text(plain.choices[0]) == " Deep learning is");
}

TEST_CASE("alternatives come out best first with ties in the order sent for few and many") {
  for (const std::size_t count : {std::size_t{5}, std::size_t{40}}) {
    // Logprobs -(i % 4): four ties at each of four levels, interleaved.
    std::string top;
    std::vector<std::string> expected;
    for (int level = 0; level < 4; ++level) {
      for (std::size_t i = 0; i < count; ++i) {
        if (static_cast<int>(i % 4) == level) expected.push_back("t" + std::to_string(i));
      }
    }
    for (std::size_t i = 0; i < count; ++i) {
      top += (i ? "," : "") + std::string("\"t") + std::to_string(i) + "\":" + std::to_string(-double(i % 4));
    }
    const std::string stream = "data: {\"choices\":[{\"index\":0,\"text\":\"t0\",\"logprobs\":{\"tokens\":[\"t0\"],"
                               "\"token_logprobs\":[0],\"top_logprobs\":[{" + top + "}]}}]}\n\ndata: [DONE]\n\n";
    const Exchange exchange = decode_stream(stream, Dialect::openai_completions);
    REQUIRE(exchange.choices.size() == 1);
    REQUIRE(exchange.choices[0].tokens.size() == 1);
    std::vector<std::string> sorted;
    const Choice& choice = exchange.choices[0];
    for (const Alternative& alternative : choice.top(choice.tokens[0])) sorted.push_back(alternative.bytes);
    CHECK(sorted == expected);
  }
}

TEST_CASE("OpenAI chat logprobs keep byte tokens of a split character as their bytes") {
  const Exchange stream = decode_stream(read_data("openai/chat-stream-logprobs.sse"), Dialect::openai_chat);
  REQUIRE(stream.choices.size() == 1);
  const Choice& choice = stream.choices[0];
  CHECK(choice.kind == TokenKind::logprob_tokens);
  REQUIRE(choice.tokens.size() == 3);
  CHECK(choice.tokens[1].bytes == "\xF0\x9F\x98");
  CHECK(choice.tokens[2].bytes == "\x8A");
  CHECK(choice_text(choice) == "Hi😊");
  REQUIRE(choice.top(choice.tokens[0]).size() == 2);
  CHECK(choice.top(choice.tokens[0])[0].bytes == "Hi");  // sorted best first though sent otherwise
  CHECK(choice.top(choice.tokens[0])[1].bytes == "Hello");
  CHECK(stream.usage.total_tokens == 14);
  CHECK(stream.decode_note.empty());

  const Exchange body = decode_body(read_data("openai/chat-nonstream-logprobs.json"), Dialect::openai_chat);
  REQUIRE(body.choices.size() == 1);
  REQUIRE(body.choices[0].tokens.size() == 3);
  CHECK(body.choices[0].tokens[2].bytes == stream.choices[0].tokens[2].bytes);
  CHECK(choice_text(body.choices[0]) == "Hi😊");
  CHECK(body.choices[0].kind == TokenKind::logprob_tokens);
  CHECK(body.choices[0].finish_reason == "stop");
}

TEST_CASE("Chat reasoning - answers and tool call arguments are generated text each in its own part") {
  ResponseDecoder decoder(Dialect::openai_chat);
  decoder.on_event(R"({"choices":[{"index":0,"delta":{"reasoning_content":"think"}}]})", 1);
  decoder.on_event(R"({"choices":[{"index":0,"delta":{"content":"Sure."}}]})", 2);
  decoder.on_event(R"({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"f","arguments":"{\"x\""}}]}}]})", 3);
  decoder.on_event(R"({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":":1}"}}]},"finish_reason":"tool_calls"}]})", 4);
  decoder.on_event("[DONE]", 5);
  Exchange exchange;
  decoder.finish(exchange);
  // Not one joined string (that made a tool call equal to text): reasoning, answer and the call,
  // each its own stream, in the order generated; every part carries the choice's finish reason.
  REQUIRE(exchange.choices.size() == 3);
  CHECK(exchange.choices[0].part == Part::reasoning);
  CHECK(choice_text(exchange.choices[0]) == "think");
  CHECK(exchange.choices[1].part == Part::content);
  CHECK(choice_text(exchange.choices[1]) == "Sure.");
  CHECK(exchange.choices[2].part == Part::tool_call);
  CHECK(exchange.choices[2].tool_name == "f");
  CHECK(choice_text(exchange.choices[2]) == "{\"x\":1}");
  CHECK(exchange.choices[2].tokens.size() == 2);
  for (const Choice& choice : exchange.choices) CHECK(choice.finish_reason == "tool_calls");
}
