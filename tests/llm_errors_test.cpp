// Tests for llm/'s failure classification: a server that fails after its 200 header. The streams
// in tests/data/ are the bytes vLLM and SGLang write (tests/data/server-errors.README.txt names
// the source code each shape comes from); ResponseDecoder::finish turns them into
// ErrorKind::server_error, and a stream cut before its end into ErrorKind::truncated.
#include <catch2/catch.hpp>

#include "llm/llm.hpp"
#include "tests/test_data.hpp"

using namespace retrace;
using namespace retrace::llm;
using retrace::testing::read_data;

namespace {

// A streamed 200 exchange decoded as record and replay decode it: the SSE bytes fed in two pieces
// cut at `cut` through feed_sse, then finish().
Exchange decode_streamed(std::string_view sse, Dialect dialect, std::size_t cut, int status = 200) {
  ResponseDecoder decoder(dialect);
  SseParser parser;
  Exchange exchange;
  exchange.response.status = static_cast<std::uint16_t>(status);
  exchange.response.streamed = true;
  feed_sse(parser, sse.substr(0, cut), 1000, &decoder, &exchange.response.events);
  feed_sse(parser, sse.substr(cut), 2000, &decoder, &exchange.response.events);
  keep_partial_event(parser, 2000, exchange.response.events);
  decoder.finish(exchange);
  return exchange;
}

Exchange decode_streamed(std::string_view sse, Dialect dialect) { return decode_streamed(sse, dialect, sse.size()); }

Exchange decode_whole_body(std::string_view body, Dialect dialect, int status) {
  ResponseDecoder decoder(dialect);
  Exchange exchange;
  exchange.response.status = static_cast<std::uint16_t>(status);
  exchange.response.body = std::string(body);
  decoder.on_body(body, 5000);
  decoder.finish(exchange);
  return exchange;
}

bool contains(const std::string& text, std::string_view part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("A vLLM error event after the 200 header makes the exchange a server_error whatever the split") {
  const std::string sse = read_data("vllm/chat-stream-error.sse");
  for (std::size_t cut = 0; cut <= sse.size(); ++cut) {
    const Exchange exchange = decode_streamed(sse, Dialect::openai_chat, cut);
    INFO("split at byte " << cut);
    REQUIRE(exchange.error.kind == ErrorKind::server_error);
    CHECK(exchange.error.message ==
          "the server reported an error in a 200 response, event 3: CUDA out of memory. Tried to allocate 2.00 GiB");
    // What arrived before the failure is kept as decoded.
    REQUIRE(exchange.choices.size() == 1);
    CHECK(choice_text(exchange.choices[0]) == "Hello there");
  }
}

TEST_CASE("The error event of vLLM 0.9 and earlier with object error inside is a server_error") {
  const Exchange exchange = decode_streamed(read_data("vllm/completions-stream-error-v0.sse"), Dialect::openai_completions);
  CHECK(exchange.error.kind == ErrorKind::server_error);
  CHECK(contains(exchange.error.message, "event 1: The decoder prompt is too long"));
  CHECK(choice_text(exchange.choices.at(0)) == "Hello");
}

TEST_CASE("An SGLang error event is a server_error") {
  const Exchange exchange = decode_streamed(read_data("sglang/chat-stream-error.sse"), Dialect::openai_chat);
  CHECK(exchange.error.kind == ErrorKind::server_error);
  CHECK(contains(exchange.error.message, "event 1: Internal server error: out of memory"));
  CHECK(contains(exchange.decode_note, "server error"));
}

TEST_CASE("A whole body with object error under status 200 is a server_error") {
  const Exchange exchange = decode_whole_body(read_data("vllm/chat-nonstream-error-v0.json"), Dialect::openai_chat, 200);
  CHECK(exchange.error.kind == ErrorKind::server_error);
  CHECK(exchange.error.message ==
        "the server reported an error in a 200 response, body: CUDA out of memory. Tried to allocate 2.00 GiB");
  CHECK(exchange.choices.empty());
}

TEST_CASE("An error body under an error status is left to the HTTP status classification") {
  const Exchange exchange = decode_whole_body(read_data("vllm/chat-nonstream-error-v0.json"), Dialect::openai_chat, 500);
  CHECK(exchange.error.kind == ErrorKind::none);
  CHECK(contains(exchange.decode_note, "server error"));
}

TEST_CASE("A stream that ends without DONE or a finish reason is truncated whatever the split") {
  const std::string sse = read_data("vllm/chat-stream-truncated.sse");
  for (std::size_t cut = 0; cut <= sse.size(); ++cut) {
    INFO("split at byte " << cut);
    const Exchange exchange = decode_streamed(sse, Dialect::openai_chat, cut);
    REQUIRE(exchange.error.kind == ErrorKind::truncated);
    CHECK(exchange.error.message == "the stream ended after 2 events without its end marker ([DONE]) or a finish reason");
    CHECK(choice_text(exchange.choices.at(0)) == "Hello");
  }
}

TEST_CASE("A 200 event stream with no event at all is truncated") {
  const Exchange exchange = decode_streamed("", Dialect::openai_completions);
  CHECK(exchange.error.kind == ErrorKind::truncated);
  CHECK(exchange.error.message == "the stream ended before its first event");
}

TEST_CASE("A stream cut inside its last event is truncated") {
  std::string sse = read_data("vllm/chat-stream-truncated.sse");
  sse += R"(data: {"id":"chatcmpl-b2f1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":" th)";
  const Exchange exchange = decode_streamed(sse, Dialect::openai_chat);
  CHECK(exchange.error.kind == ErrorKind::truncated);
}

TEST_CASE("A stream whose every choice finished but whose DONE is missing is not an error") {
  const std::string sse =
      "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"},\"finish_reason\":null}]}\n\n"
      "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n";
  const Exchange exchange = decode_streamed(sse, Dialect::openai_chat);
  CHECK(exchange.error.kind == ErrorKind::none);
  CHECK(contains(exchange.decode_note, "before its end marker"));
}

TEST_CASE("A stream of n=2 with one choice unfinished and no DONE is truncated") {
  const std::string sse =
      "data: {\"choices\":[{\"index\":0,\"text\":\"a\",\"finish_reason\":\"length\"}]}\n\n"
      "data: {\"choices\":[{\"index\":1,\"text\":\"b\",\"finish_reason\":null}]}\n\n";
  CHECK(decode_streamed(sse, Dialect::openai_completions).error.kind == ErrorKind::truncated);
}

TEST_CASE("A complete stream with DONE is no error") {
  const Exchange exchange = decode_streamed(read_data("vllm/chat-stream-token-ids.sse"), Dialect::openai_chat);
  CHECK(exchange.error.kind == ErrorKind::none);
}

TEST_CASE("An error the transport already gave stays the exchange's error") {
  ResponseDecoder decoder(Dialect::openai_chat);
  SseParser parser;
  Exchange exchange;
  exchange.response.status = 200;
  exchange.response.streamed = true;
  exchange.error = {ErrorKind::reset, "connection reset by the upstream"};
  feed_sse(parser, read_data("vllm/chat-stream-truncated.sse"), 1000, &decoder, &exchange.response.events);
  decoder.finish(exchange);
  CHECK(exchange.error.kind == ErrorKind::reset);
  CHECK(exchange.error.message == "connection reset by the upstream");
}

TEST_CASE("A stream of an unknown dialect without DONE is not called truncated") {
  // Dialects this decoder does not know may end their streams in their own way (an event name).
  const std::string sse = "event: message_start\ndata: {\"type\":\"message_start\"}\n\n";
  CHECK(decode_streamed(sse, Dialect::unknown).error.kind == ErrorKind::none);
}

TEST_CASE("A TGI stream error is a server_error") {
  const std::string sse =
      "data:{\"token\":{\"id\":1,\"text\":\"a\",\"logprob\":-0.1,\"special\":false},\"generated_text\":null,\"details\":null}\n\n"
      "data:{\"error\":\"Request failed during generation: Server error: CUDA out of memory\",\"error_type\":\"generation\"}\n\n";
  const Exchange exchange = decode_streamed(sse, Dialect::tgi_generate);
  CHECK(exchange.error.kind == ErrorKind::server_error);
  CHECK(contains(exchange.error.message, "event 1: Request failed during generation"));
}

TEST_CASE("The decoder reused for the next response forgets the last one's server error") {
  ResponseDecoder decoder(Dialect::openai_chat);
  SseParser parser;
  Exchange failed;
  failed.response.status = 200;
  failed.response.streamed = true;
  feed_sse(parser, read_data("vllm/chat-stream-error.sse"), 1000, &decoder, &failed.response.events);
  decoder.finish(failed);
  REQUIRE(failed.error.kind == ErrorKind::server_error);
  decoder.reset(Dialect::openai_chat);
  SseParser next_parser;
  Exchange next;
  next.response.status = 200;
  next.response.streamed = true;
  feed_sse(next_parser, read_data("vllm/chat-stream-token-ids.sse"), 1000, &decoder, &next.response.events);
  decoder.finish(next);
  CHECK(next.error.kind == ErrorKind::none);
}

TEST_CASE("The new error kinds have the names traces and reports use") {
  CHECK(to_string(ErrorKind::server_error) == "server_error");
  CHECK(to_string(ErrorKind::truncated) == "truncated");
  CHECK(error_kind_from_string("server_error") == ErrorKind::server_error);
  CHECK(error_kind_from_string("truncated") == ErrorKind::truncated);
}

// OpenAI's Responses API ends a stream that failed with response.failed (status "failed" and an
// error object), or sends an error event; both are the server's error, as a chat error event is.
TEST_CASE("A Responses stream ending in response.failed is a server_error whatever the split") {
  const std::string sse =
      "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"status\":\"in_progress\"}}\n\n"
      "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"output_index\":0,"
      "\"delta\":\"Hel\"}\n\n"
      "event: response.failed\ndata: {\"type\":\"response.failed\",\"response\":{\"status\":\"failed\","
      "\"error\":{\"code\":\"server_error\",\"message\":\"The model crashed\"}}}\n\n";
  for (std::size_t cut = 0; cut <= sse.size(); cut += 7) {
    INFO("split at byte " << cut);
    const Exchange exchange = decode_streamed(sse, Dialect::openai_responses, cut);
    REQUIRE(exchange.error.kind == ErrorKind::server_error);
    CHECK(contains(exchange.error.message, "event 2: The model crashed"));
    CHECK(choice_text(exchange.choices.at(0)) == "Hel");
  }
  // Without a message the event's type says what failed.
  const Exchange bare = decode_streamed(
      "data: {\"type\":\"response.failed\",\"response\":{\"status\":\"failed\"}}\n\n", Dialect::openai_responses);
  CHECK(bare.error.kind == ErrorKind::server_error);
  CHECK(contains(bare.error.message, "response.failed"));
}

TEST_CASE("A Responses error event is a server_error and not truncated") {
  const Exchange exchange = decode_streamed(
      "data: {\"type\":\"response.output_text.delta\",\"output_index\":0,\"delta\":\"a\"}\n\n"
      "data: {\"type\":\"error\",\"code\":\"rate_limit_exceeded\",\"message\":\"Slow down\"}\n\n",
      Dialect::openai_responses);
  CHECK(exchange.error.kind == ErrorKind::server_error);
  CHECK(contains(exchange.error.message, "event 1: Slow down"));
}

TEST_CASE("A whole Responses body with status failed is a server_error and a completed one is not") {
  const Exchange failed = decode_whole_body(
      R"({"object":"response","status":"failed","error":{"message":"boom"},"output":[]})", Dialect::openai_responses, 200);
  CHECK(failed.error.kind == ErrorKind::server_error);
  CHECK(contains(failed.error.message, "boom"));
  const Exchange completed = decode_whole_body(
      R"({"object":"response","status":"completed","error":null,"output":[{"type":"message","content":)"
      R"([{"type":"output_text","text":"hi"}]}]})",
      Dialect::openai_responses, 200);
  CHECK(completed.error.kind == ErrorKind::none);
}
