// Tests for decoding llama.cpp's answers, on responses captured from a real server
// (tests/data/llamacpp/README.txt): native and OpenAI-style, streamed and whole.
#include <catch2/catch.hpp>

#include "llm/llm.hpp"
#include "tests/llm_samples.hpp"

using namespace retrace;
using namespace retrace::llm;
using namespace retrace::testing;

// ---------------------------------------------------------------------------------------------
// llama.cpp, on responses captured from a real server (tests/data/llamacpp/README.txt)

TEST_CASE("llama.cpp native stream decodes to the ids and text of the non-stream answer") {
  const Exchange stream = decode_stream(read_data("llamacpp/completion-native-stream.sse"), Dialect::llamacpp_completion);
  const auto body = json_file("llamacpp/completion-native-nonstream.json");
  REQUIRE(stream.choices.size() == 1);
  const Choice& choice = stream.choices[0];
  CHECK(choice.kind == TokenKind::token_ids);
  REQUIRE(choice.tokens.size() == 64);
  const auto expected_ids = ints_of(body.at("tokens").as_array());
  const auto ids = ids_of(choice);
  CHECK(std::vector<std::int32_t>(ids.begin(), ids.begin() + expected_ids.size()) == expected_ids);
  // Same prompt at temperature 0: the 8-token answer is a prefix of the 64-token stream.
  const std::string content = json_string(body.at("content"));
  CHECK(choice_text(choice).substr(0, content.size()) == content);
  CHECK(choice.finish_reason == "length");
  CHECK(stream.usage.prompt_tokens == 6);
  CHECK(stream.usage.completion_tokens == 64);
  CHECK(stream.usage.total_tokens == 70);
  // n_probs 3: logprob and three alternatives, best first, with ids and bytes.
  const Token& first = choice.tokens[0];
  CHECK(first.id == 24453);
  CHECK(first.bytes == "isie");
  CHECK(first.has_logprob);
  CHECK(first.logprob == Approx(-6.205460548400879));
  REQUIRE(choice.top(first).size() == 3);
  CHECK(choice.top(first)[1].id == 10953);
  CHECK(choice.top(first)[1].bytes == " lleg");
  CHECK(choice.top(first)[0].logprob >= choice.top(first)[1].logprob);
  CHECK(choice.top(first)[1].logprob >= choice.top(first)[2].logprob);
  CHECK(stream.dialect == "llamacpp_completion");
  CHECK(stream.decode_note.empty());
}

TEST_CASE("llama.cpp native stream without a DONE marker is finished by its stop event") {
  const std::string sse = read_data("llamacpp/completion-native-stream.sse");
  REQUIRE(sse.find("[DONE]") == std::string::npos);
  ResponseDecoder decoder(Dialect::llamacpp_completion);
  SseParser parser;
  std::vector<std::string> data;
  parser.feed(sse, [&](const SseEvent& event) { data.emplace_back(event.data); });
  REQUIRE(data.size() == 65);
  for (std::size_t i = 0; i + 1 < data.size(); ++i) decoder.on_event(data[i], 0);
  CHECK_FALSE(decoder.finished());
  decoder.on_event(data.back(), 0);
  CHECK(decoder.finished());
}

TEST_CASE("llama.cpp native non-stream body gives the ids of its tokens array and its content") {
  const Exchange exchange = decode_body(read_data("llamacpp/completion-native-nonstream.json"), Dialect::llamacpp_completion);
  const auto body = json_file("llamacpp/completion-native-nonstream.json");
  REQUIRE(exchange.choices.size() == 1);
  const Choice& choice = exchange.choices[0];
  CHECK(choice.kind == TokenKind::token_ids);
  CHECK(ids_of(choice) == ints_of(body.at("tokens").as_array()));
  CHECK(choice_text(choice) == json_string(body.at("content")));
  CHECK(choice.finish_reason == "length");
  CHECK(exchange.usage.prompt_tokens == 6);
  CHECK(exchange.usage.completion_tokens == 8);
  // Ids without per-token text: said so rather than silently.
  CHECK(exchange.decode_note.find("no per-token text") != std::string::npos);
}

TEST_CASE("llama.cpp merges byte tokens of one character into one event and the ids stay in order") {
  // The quirk from README.txt: two byte tokens of "克" (E5 85 8B) arrive in one event.
  const std::string event =
      R"({"index":0,"content":"克","tokens":[229,31510],"stop":false,"completion_probabilities":[)"
      R"({"id":229,"token":"\ufffd","bytes":[229],"logprob":-1.0,"top_logprobs":[]},)"
      R"({"id":31510,"token":"\ufffd","bytes":[133,139],"logprob":-2.0,"top_logprobs":[]}]})";
  const std::string ids_only = R"({"index":0,"content":"克","tokens":[229,31510],"stop":false})";
  for (const std::string& data : {event, ids_only}) {
    ResponseDecoder decoder(Dialect::llamacpp_completion);
    decoder.on_event(data, 7);
    decoder.on_event(R"({"index":0,"content":"","tokens":[],"stop":true,"stop_type":"eos"})", 9);
    Exchange exchange;
    decoder.finish(exchange);
    REQUIRE(exchange.choices.size() == 1);
    const Choice& choice = exchange.choices[0];
    CHECK(ids_of(choice) == std::vector<std::int32_t>{229, 31510});
    CHECK(choice_text(choice) == "克");
    CHECK(choice.tokens[1].offset_ns == 7);
    CHECK(choice.finish_reason == "stop");
    CHECK(choice.kind == TokenKind::token_ids);
  }
}

TEST_CASE("llama.cpp v1 completions stream with logprobs gives token ids in the chat-style shape") {
  const Exchange stream = decode_stream(read_data("llamacpp/v1-completions-stream-logprobs.sse"), Dialect::openai_completions);
  const Exchange native = decode_stream(read_data("llamacpp/completion-native-stream.sse"), Dialect::llamacpp_completion);
  const auto body = json_file("llamacpp/v1-completions-nonstream.json");
  REQUIRE(stream.choices.size() == 1);
  const Choice& choice = stream.choices[0];
  CHECK(choice.kind == TokenKind::token_ids);
  CHECK(choice.tokens.size() == 64);
  CHECK(ids_of(choice) == ids_of(native.choices.at(0)));
  CHECK(choice_text(choice) == json_string(body.at("choices").at(0).at("text")));
  CHECK(choice.top(choice.tokens[0]).size() == 3);
  CHECK(choice.finish_reason == "length");
  CHECK(stream.usage.completion_tokens == 64);
  CHECK(stream.usage.prompt_tokens == 6);
  CHECK(stream.decode_note.empty());
}

TEST_CASE("llama.cpp v1 completions stream without logprobs gives one text delta per event") {
  const Exchange stream = decode_stream(read_data("llamacpp/v1-completions-stream.sse"), Dialect::openai_completions);
  const auto body = json_file("llamacpp/v1-completions-nonstream.json");
  REQUIRE(stream.choices.size() == 1);
  const Choice& choice = stream.choices[0];
  CHECK(choice.kind == TokenKind::text_deltas);
  CHECK(choice.tokens.size() == 64);
  CHECK(choice.tokens[0].id == -1);
  CHECK(choice.tokens[0].bytes == "isie");
  CHECK(choice_text(choice) == json_string(body.at("choices").at(0).at("text")));
  CHECK(choice.finish_reason == "length");
  CHECK(stream.usage.total_tokens == 70);
  // Offsets are the arrival of each event (decode_stream numbers them 1000, 2000, ...).
  CHECK(choice.tokens[0].offset_ns == 1000);
  CHECK(choice.tokens[1].offset_ns == 2000);
}

TEST_CASE("llama.cpp v1 completions non-stream bodies decode with and without logprobs") {
  const Exchange plain = decode_body(read_data("llamacpp/v1-completions-nonstream.json"), Dialect::openai_completions);
  REQUIRE(plain.choices.size() == 1);
  CHECK(plain.choices[0].kind == TokenKind::text_deltas);
  CHECK(plain.choices[0].tokens.size() == 1);
  CHECK(plain.usage.completion_tokens == 64);

  const Exchange logprobs = decode_body(read_data("llamacpp/v1-completions-nonstream-logprobs.json"), Dialect::openai_completions);
  const Exchange native = decode_stream(read_data("llamacpp/completion-native-stream.sse"), Dialect::llamacpp_completion);
  REQUIRE(logprobs.choices.size() == 1);
  const Choice& choice = logprobs.choices[0];
  CHECK(choice.kind == TokenKind::token_ids);
  const auto native_ids = ids_of(native.choices.at(0));
  CHECK(ids_of(choice) == std::vector<std::int32_t>(native_ids.begin(), native_ids.begin() + 4));
  CHECK(choice_text(choice) == "isie depois ekonom чо");
  CHECK(choice.tokens[3].bytes == " чо");
  CHECK(choice.top(choice.tokens[0]).size() == 2);
  CHECK(logprobs.decode_note.empty());
}

TEST_CASE("llama.cpp chat stream takes usage from the final chunk with no choices") {
  const Exchange stream = decode_stream(read_data("llamacpp/v1-chat-completions-stream.sse"), Dialect::openai_chat);
  const auto body = json_file("llamacpp/v1-chat-completions-nonstream.json");
  REQUIRE(stream.choices.size() == 1);
  const Choice& choice = stream.choices[0];
  CHECK(choice.kind == TokenKind::text_deltas);
  CHECK(choice.tokens.size() == 16);
  CHECK(choice_text(choice) == json_string(body.at("choices").at(0).at("message").at("content")));
  CHECK(choice.finish_reason == "length");
  CHECK(stream.usage.prompt_tokens == 34);
  CHECK(stream.usage.completion_tokens == 16);
  CHECK(stream.usage.total_tokens == 50);

  const Exchange nonstream = decode_body(read_data("llamacpp/v1-chat-completions-nonstream.json"), Dialect::openai_chat);
  REQUIRE(nonstream.choices.size() == 1);
  CHECK(choice_text(nonstream.choices[0]) == choice_text(choice));
  CHECK(nonstream.usage.total_tokens == 50);
}

TEST_CASE("llama.cpp probabilities spelled as prob and top_probs - or the old probs - become logprobs") {
  ResponseDecoder decoder(Dialect::llamacpp_completion);
  decoder.on_event(R"({"content":" a","tokens":[264],"stop":false,"completion_probabilities":[)"
                   R"({"id":264,"token":" a","bytes":[32,97],"prob":0.5,)"
                   R"("top_probs":[{"id":9,"token":" b","bytes":[32,98],"prob":0.25},{"id":264,"token":" a","bytes":[32,97],"prob":0.5}]}]})",
                   1);
  decoder.on_event(R"({"content":" c","stop":false,"completion_probabilities":[)"
                   R"({"content":" c","probs":[{"tok_str":" c","prob":1.0},{"tok_str":" d","prob":0.0}]}]})",
                   2);
  decoder.on_event(R"({"content":"","stop":true,"stop_type":"word"})", 3);
  Exchange exchange;
  decoder.finish(exchange);
  REQUIRE(exchange.choices.size() == 1);
  const Choice& choice = exchange.choices[0];
  REQUIRE(choice.tokens.size() == 2);
  CHECK(choice.tokens[0].logprob == Approx(std::log(0.5)));
  REQUIRE(choice.top(choice.tokens[0]).size() == 2);
  CHECK(choice.top(choice.tokens[0])[0].id == 264);
  CHECK(choice.top(choice.tokens[0])[1].bytes == " b");
  CHECK(choice.tokens[1].bytes == " c");
  CHECK(choice.top(choice.tokens[1])[0].bytes == " c");
  CHECK(choice.top(choice.tokens[1])[1].logprob < -1e30);  // probability 0: finite, lowest
  CHECK(choice.kind == TokenKind::logprob_tokens);  // the old format has no ids
  CHECK(choice.finish_reason == "stop");
}
