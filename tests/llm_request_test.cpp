// Tests for the request side of llm/: dialect detection from the path, token id modes and
// fields, streaming, and what counts as an inference request.
#include <catch2/catch.hpp>

#include "llm/llm.hpp"
#include "tests/llm_samples.hpp"

using namespace retrace;
using namespace retrace::llm;
using namespace retrace::testing;

// ---------------------------------------------------------------------------------------------
// Dialects

TEST_CASE("Dialect detection reads the path - ignoring query - prefix and trailing slash") {
  CHECK(detect_dialect("/v1/completions", "{}") == Dialect::openai_completions);
  CHECK(detect_dialect("/v1/chat/completions", "{}") == Dialect::openai_chat);
  CHECK(detect_dialect("/chat/completions", "{}") == Dialect::openai_chat);
  CHECK(detect_dialect("/openai/v1/chat/completions?api-version=2024-06-01", "{}") == Dialect::openai_chat);
  CHECK(detect_dialect("/v1/completions/", "{}") == Dialect::openai_completions);
  CHECK(detect_dialect("/completion", "{\"prompt\":\"x\"}") == Dialect::llamacpp_completion);
  CHECK(detect_dialect("/completions", "{\"prompt\":\"x\",\"n_predict\":8}") == Dialect::llamacpp_completion);
  CHECK(detect_dialect("/completions", "{\"prompt\":\"x\",\"max_tokens\":8}") == Dialect::openai_completions);
  CHECK(detect_dialect("/generate", "{}") == Dialect::tgi_generate);
  CHECK(detect_dialect("/generate_stream", "{}") == Dialect::tgi_generate);
  CHECK(detect_dialect("/generate", R"({"inputs":"x","parameters":{}})") == Dialect::tgi_generate);
  CHECK(detect_dialect("/generate", R"({"text":"x","sampling_params":{}})") == Dialect::unknown);  // SGLang
  CHECK(detect_dialect("/", R"({"inputs":"x"})") == Dialect::tgi_generate);
  CHECK(detect_dialect("/", "{}") == Dialect::unknown);
  CHECK(detect_dialect("/v1/models", "") == Dialect::unknown);
  CHECK(detect_dialect("/health", "") == Dialect::unknown);
  CHECK(detect_dialect("", "") == Dialect::unknown);
  CHECK(to_string(Dialect::openai_chat) == "openai_chat");
  CHECK(to_string(Dialect::unknown) == "");
}

// ---------------------------------------------------------------------------------------------
// Request side

TEST_CASE("Token id modes parse by name") {
  CHECK(token_id_mode_from_string("vllm") == TokenIdMode::vllm);
  CHECK(token_id_mode_from_string("llamacpp") == TokenIdMode::llamacpp);
  CHECK(token_id_mode_from_string("logprobs") == TokenIdMode::logprobs);
  CHECK(token_id_mode_from_string("off") == TokenIdMode::off);
  CHECK_FALSE(token_id_mode_from_string("ids").has_value());
}

TEST_CASE("Every token id mode's name parses back to that mode") {
  for (const TokenIdMode mode : {TokenIdMode::off, TokenIdMode::vllm, TokenIdMode::llamacpp, TokenIdMode::logprobs}) {
    CHECK(token_id_mode_from_string(to_string(mode)) == mode);
  }
  CHECK(to_string(TokenIdMode::llamacpp) == "llamacpp");
}

TEST_CASE("Adding token id fields appends them and keeps the client's bytes") {
  const std::string body = R"({"model":"m","prompt":"hi","temperature":0.70,"max_tokens":5})";
  const std::string vllm = add_token_id_fields(body, Dialect::openai_completions, TokenIdMode::vllm);
  CHECK(vllm.substr(0, body.size() - 1) == body.substr(0, body.size() - 1));  // 0.70 stays 0.70
  const auto parsed = boost::json::parse(vllm).as_object();
  CHECK(parsed.at("logprobs").as_int64() == 2);
  CHECK(parsed.at("return_tokens_as_token_ids").as_bool());
  CHECK(parsed.at("return_token_ids").as_bool());

  const auto chat = boost::json::parse(add_token_id_fields(R"({"messages":[],"logprobs":false})",
                                                           Dialect::openai_chat, TokenIdMode::logprobs))
                        .as_object();
  CHECK(chat.at("logprobs").as_bool());
  CHECK(chat.at("top_logprobs").as_int64() == 2);
  CHECK_FALSE(chat.contains("return_token_ids"));

  const auto native = boost::json::parse(add_token_id_fields(R"({"prompt":"x","n_probs":5})",
                                                             Dialect::llamacpp_completion, TokenIdMode::llamacpp))
                          .as_object();
  CHECK(native.at("return_tokens").as_bool());
  CHECK(native.at("n_probs").as_int64() == 5);  // the client's larger request is kept

  const auto tgi = boost::json::parse(add_token_id_fields(R"({"inputs":"x","parameters":{}})",
                                                          Dialect::tgi_generate, TokenIdMode::logprobs))
                       .as_object();
  CHECK(tgi.at("details").as_bool());

  const std::string empty = add_token_id_fields("{}", Dialect::openai_completions, TokenIdMode::logprobs);
  CHECK(boost::json::parse(empty).as_object().at("logprobs").as_int64() == 2);
  CHECK(add_token_id_fields(body, Dialect::openai_completions, TokenIdMode::off) == body);
  CHECK(add_token_id_fields("not json", Dialect::openai_chat, TokenIdMode::vllm) == "not json");
  CHECK(add_token_id_fields("[1]", Dialect::openai_chat, TokenIdMode::vllm) == "[1]");
  CHECK(add_token_id_fields(body, Dialect::unknown, TokenIdMode::vllm) == body);
}

TEST_CASE("replay streams completions and chat with include_usage unless told not to") {
  namespace json = boost::json;
  const auto on = json::parse(set_streaming(R"({"model":"m","prompt":"x"})", Dialect::openai_completions, true));
  CHECK(on.at("stream").as_bool());
  CHECK(on.at("stream_options").at("include_usage").as_bool());
  CHECK(on.as_object().begin()->key() == "model");  // key order kept
  const std::string done = R"({"messages":[],"stream":true,"stream_options":{"include_usage":true}})";
  CHECK(set_streaming(done, Dialect::openai_chat, true) == done);  // already as wanted: bytes kept
  const auto merged = json::parse(set_streaming(R"({"messages":[],"stream_options":{"continuous_usage_stats":true}})",
                                                Dialect::openai_chat, true));
  CHECK(merged.at("stream_options").at("continuous_usage_stats").as_bool());
  CHECK(merged.at("stream_options").at("include_usage").as_bool());
  const auto off = json::parse(set_streaming(done, Dialect::openai_chat, false));
  CHECK_FALSE(off.at("stream").as_bool());
  CHECK_FALSE(off.as_object().contains("stream_options"));
  const std::string plain = R"({"prompt":"x"})";
  CHECK(set_streaming(plain, Dialect::openai_completions, false) == plain);
  CHECK(set_streaming(plain, Dialect::tgi_generate, true) == plain);
  CHECK(set_streaming("not json", Dialect::openai_chat, true) == "not json");
}

TEST_CASE("inference requests are told apart from listings and scrapes") {
  CHECK(is_inference_request("/v1/chat/completions", "{}"));
  CHECK(is_inference_request("/v1/completions?x=1", "{}"));
  CHECK(is_inference_request("/v1/embeddings", "{}"));
  CHECK(is_inference_request("/generate", R"({"text":"x"})"));
  CHECK_FALSE(is_inference_request("/v1/models", ""));
  CHECK_FALSE(is_inference_request("/metrics", ""));
  CHECK_FALSE(is_inference_request("/health", ""));
  CHECK_FALSE(is_inference_request("/", ""));
}
