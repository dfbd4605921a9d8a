// Unit tests of the preflight: identifying the server from what it answers (samples as each server
// writes them: llama.cpp's from /work/shared/samples and tests/real, the others' from their
// protocol sources), and the token-id fields --token-ids auto asks each for.
#include <catch2/catch.hpp>

#include "replay/preflight.hpp"
#include "replay/replay.hpp"

using namespace retrace;
using namespace retrace::replay;

namespace {

net::Fetched answer(std::string body, std::string server = {}) {
  net::Fetched fetched;
  fetched.status = 200;
  fetched.body = std::move(body);
  fetched.server = std::move(server);
  return fetched;
}

net::Fetched not_found() {
  net::Fetched fetched;
  fetched.status = 404;
  fetched.body = "Not Found";
  return fetched;
}

Probes nothing_but(net::Fetched models) {
  Probes probes;
  probes.models = std::move(models);
  probes.version = probes.info = probes.props = probes.server_info = probes.model_info = not_found();
  return probes;
}

}  // namespace

TEST_CASE("preflight identifies llama.cpp by its Server header and reads its build from props") {
  auto probes = nothing_but(answer(
      R"({"models":[{"name":"tiny","model":"tiny"}],"object":"list","data":[{"id":"tiny-random-llama","object":"model","created":1,"owned_by":"llamacpp","meta":{}}]})",
      "llama.cpp"));
  probes.props = answer(R"({"default_generation_settings":{"n_ctx":2048},"total_slots":32,"build_info":"b1-de3ff81"})");
  auto server = identify(probes);
  CHECK(server.kind == "llama.cpp");
  CHECK(server.version == "b1-de3ff81");
  CHECK(server.evidence == "Server: llama.cpp");
  CHECK(served_models(probes.models) == std::vector<std::string>{"tiny-random-llama"});
}

TEST_CASE("preflight identifies vLLM and SGLang by owned_by and reads their versions") {
  auto vllm = nothing_but(answer(R"({"object":"list","data":[{"id":"facebook/opt-125m","object":"model","owned_by":"vllm","max_model_len":2048}]})", "uvicorn"));
  vllm.version = answer(R"({"version":"0.10.2"})");
  CHECK(identify(vllm).kind == "vllm");
  CHECK(identify(vllm).version == "0.10.2");

  auto sglang = nothing_but(answer(R"({"object":"list","data":[{"id":"qwen/qwen2.5-0.5b-instruct","object":"model","owned_by":"sglang"}]})"));
  sglang.server_info = answer(R"({"version":"0.5.2","model_path":"qwen/qwen2.5-0.5b-instruct"})");
  CHECK(identify(sglang).kind == "sglang");
  CHECK(identify(sglang).version == "0.5.2");

  auto native_sglang = nothing_but(not_found());
  native_sglang.model_info = answer(R"({"model_path":"qwen/qwen2.5-0.5b-instruct","is_generation":true})");
  CHECK(identify(native_sglang).kind == "sglang");
}

TEST_CASE("preflight identifies TGI by the router its info names") {
  auto probes = nothing_but(answer(R"({"object":"list","data":[{"id":"tgi","object":"model","created":0,"owned_by":"bigscience/bloom-560m"}]})"));
  probes.info = answer(R"({"model_id":"bigscience/bloom-560m","max_input_tokens":1024,"router":"text-generation-router","version":"3.3.6"})");
  CHECK(identify(probes).kind == "tgi");
  CHECK(identify(probes).version == "3.3.6");
}

TEST_CASE("preflight calls any other models list openai-compatible and falls back to text") {
  auto hosted = nothing_but(answer(R"({"object":"list","data":[{"id":"gpt-4o-mini","object":"model","owned_by":"system"}]})"));
  auto server = identify(hosted);
  CHECK(server.kind == "openai-compatible");
  CHECK(server.evidence == "/v1/models owned_by system");
  std::string reason;
  CHECK(token_ids_for(server, reason) == llm::TokenIdMode::off);
  CHECK_THAT(reason, Catch::Contains("--token-ids logprobs"));
  CHECK(identify(nothing_but(not_found())).kind == "unknown");
}

TEST_CASE("token ids auto asks each known server for the fields it understands") {
  std::string reason;
  auto mode_of = [&](std::string kind) {
    ServerIdentity server;
    server.kind = std::move(kind);
    return token_ids_for(server, reason);
  };
  CHECK(mode_of("vllm") == llm::TokenIdMode::vllm);
  CHECK(mode_of("llama.cpp") == llm::TokenIdMode::llamacpp);
  CHECK(mode_of("sglang") == llm::TokenIdMode::logprobs);
  CHECK(mode_of("tgi") == llm::TokenIdMode::logprobs);
  CHECK(mode_of("retrace-serve") == llm::TokenIdMode::logprobs);
}
