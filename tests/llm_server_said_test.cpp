// Tests for llm/server_said (what a server said about one exchange, typed): llama.cpp's timings
// in captured responses (tests/data/llamacpp), vLLM's per-request metrics, SGLang's meta_info,
// TGI's headers, usage's cached tokens, and the key found only where it is JSON, not text.
#include <catch2/catch.hpp>

#include "llm/llm.hpp"
#include "llm/server_said.hpp"
#include "test_data.hpp"

using namespace retrace;
using namespace retrace::llm;
using retrace::testing::read_data;

namespace {

Response streamed(const std::string& sse) {
  Response response;
  response.status = 200;
  response.streamed = true;
  for (std::size_t at = 0; at < sse.size();) {
    auto end = sse.find("\n\n", at);
    end = end == std::string::npos ? sse.size() : end + 2;
    response.events.push_back({static_cast<std::int64_t>(at), sse.substr(at, end - at)});
    at = end;
  }
  return response;
}

Response whole(std::string body) {
  Response response;
  response.status = 200;
  response.body = std::move(body);
  return response;
}

}  // namespace

TEST_CASE("llama.cpp timings in the last event of a captured chat stream are read as typed fields") {
  auto said = server_said(streamed(read_data("llamacpp/v1-chat-completions-stream.sse")));
  CHECK(said.source == "llamacpp");
  CHECK(said.ttft_ms == Approx(4.55));
  CHECK(said.decode_ms == Approx(29.857));
  CHECK(said.prompt_computed == 34);
  CHECK(said.cached_tokens == 0);
  CHECK(said.queue_ms == -1);
}

TEST_CASE("llama.cpp timings in a native body are read past its generation settings") {
  auto said = server_said(whole(read_data("llamacpp/completion-native-nonstream.json")));
  REQUIRE(said.source == "llamacpp");
  CHECK(said.ttft_ms > 0);
  CHECK(said.prompt_computed >= 0);
  CHECK(said.cached_tokens >= 0);
}

TEST_CASE("vLLM per-request metrics in the final usage chunk are read with its cached tokens") {
  auto said = server_said(streamed(
      "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\n"
      "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":1,"
      "\"prompt_tokens_details\":{\"cached_tokens\":16}},\"metrics\":{\"time_to_first_token_ms\":500.0,"
      "\"generation_time_ms\":1000.0,\"queue_time_ms\":250.5,\"mean_itl_ms\":111.1,\"tokens_per_second\":6.6}}\n\n"
      "data: [DONE]\n\n"));
  CHECK(said.source == "vllm");
  CHECK(said.queue_ms == Approx(250.5));
  CHECK(said.ttft_ms == Approx(500));
  CHECK(said.decode_ms == Approx(1000));
  CHECK(said.cached_tokens == 16);
}

TEST_CASE("a vLLM body whose metrics are null says only usage's cached tokens") {
  auto said = server_said(whole(
      "{\"id\":\"c\",\"choices\":[{\"index\":0,\"message\":{\"content\":\"x\"}}],\"usage\":"
      "{\"prompt_tokens\":3,\"prompt_tokens_details\":{\"cached_tokens\":0}},\"metrics\":null}"));
  CHECK(said.source == "usage");
  CHECK(said.cached_tokens == 0);
  CHECK(said.ttft_ms == -1);
  CHECK_FALSE(server_said(whole("{\"choices\":[]}")).said());
}

TEST_CASE("SGLang meta_info and TGI's timing headers are read") {
  auto sglang = server_said(whole(
      "{\"text\":\"x\",\"meta_info\":{\"id\":\"a\",\"prompt_tokens\":5,\"cached_tokens\":4,\"e2e_latency\":0.25}}"));
  CHECK(sglang.source == "sglang");
  CHECK(sglang.e2e_ms == Approx(250));
  CHECK(sglang.cached_tokens == 4);
  auto response = whole(read_data("tgi/generate.json"));
  response.headers = {{"x-compute-type", "1-nvidia-a10g"}, {"X-Total-Time", "120"}, {"x-queue-time", " 7 "},
                      {"x-inference-time", "110"}};
  auto tgi = server_said(response);
  CHECK(tgi.source == "tgi");
  CHECK(tgi.e2e_ms == 120);
  CHECK(tgi.queue_ms == 7);
  CHECK(tgi.decode_ms == 110);
}

TEST_CASE("SGLang's queue_time in meta_info is read as the queue in milliseconds") {
  // A native /generate answer as SGLang's tokenizer manager writes meta_info (times in seconds).
  auto said = server_said(whole(
      "{\"text\":\" Paris.\",\"output_ids\":[12366,13],\"meta_info\":{\"id\":\"6f1c\",\"finish_reason\":"
      "{\"type\":\"length\",\"length\":2},\"prompt_tokens\":7,\"weight_version\":\"default\","
      "\"completion_tokens\":2,\"cached_tokens\":0,\"e2e_latency\":0.0412,\"queue_time\":0.0031,"
      "\"prefill_launch_delay\":0.0004,\"prefill_launch_latency\":0.0102}}"));
  CHECK(said.source == "sglang");
  CHECK(said.queue_ms == Approx(3.1));
  CHECK(said.e2e_ms == Approx(41.2));
  CHECK(said.cached_tokens == 0);
  // Streamed through /v1: the last chunk's meta_info; a null queue_time is not known.
  auto streamed_said = server_said(streamed(
      "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\n"
      "data: {\"text\":\"hi\",\"meta_info\":{\"id\":\"b\",\"e2e_latency\":0.5,\"queue_time\":null}}\n\n"
      "data: [DONE]\n\n"));
  CHECK(streamed_said.source == "sglang");
  CHECK(streamed_said.queue_ms == -1);
  CHECK(streamed_said.e2e_ms == Approx(500));
}

TEST_CASE("a key inside an answer's text is not read as the server's") {
  auto said = server_said(whole(
      "{\"choices\":[{\"index\":0,\"message\":{\"content\":\"say \\\"timings\\\": {\\\"prompt_ms\\\": 5}\"}}]}"));
  CHECK_FALSE(said.said());
  // Nor a key that is a value.
  CHECK_FALSE(server_said(whole("{\"tag\":\"metrics\",\"x\":{\"queue_time_ms\":1}}")).said());
}

TEST_CASE("decode_exchange fills what the server said from a stored stream") {
  Exchange exchange;
  exchange.request = {"POST", "/v1/chat/completions", {}, R"({"messages":[],"stream":true})"};
  exchange.response = streamed(read_data("llamacpp/v1-chat-completions-stream.sse"));
  decode_exchange(exchange);
  CHECK(exchange.server.source == "llamacpp");
  CHECK(exchange.server.prompt_computed == 34);
  exchange.response.status = 500;
  decode_exchange(exchange);
  CHECK_FALSE(exchange.server.said());
}
