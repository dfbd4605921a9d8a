// The OpenAI API as `retrace serve` reads it: request bodies into ApiRequest, and OpenAI's error
// shape {"error": {"message", "type", "param", "code"}} for whatever is wrong with them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/engine.hpp"
#include "sim/server.hpp"

namespace retrace::sim {

// The APIs that generate: OpenAI's completions and chat completions, the Responses API
// (/v1/responses) and Anthropic's Messages API (/v1/messages), as vLLM serves them all.
enum class Endpoint : std::uint8_t { completions, chat, responses, messages };

// Thrown by the parsers; the session answers with error_body(error) and `status`.
struct ApiError {
  unsigned status;
  std::string message;
  std::string param;  // "" = null
  std::string code;   // "" = null
  std::string type = "invalid_request_error";
};

std::string error_body(const ApiError& error);

struct ApiRequest {
  Endpoint endpoint = Endpoint::completions;
  bool stream = false;
  bool include_usage = false;
  int n = 1;
  SamplingParams params;
  bool want_logprobs = false;     // completions: logprobs=K; chat: logprobs=true
  bool tokens_as_ids = false;     // vLLM return_tokens_as_token_ids
  bool return_token_ids = false;  // vLLM return_token_ids
  // Prefix cache (sim/prefix_cache.hpp): vLLM's cache_salt (requests share cached blocks only
  // with the same salt) and llama.cpp's cache_prompt (false: neither read nor fill the cache).
  std::string cache_salt;
  bool cache_prompt = true;
  std::string tool_name;          // a request with "tools": the answer calls it (sim/tool_calls.hpp)
  std::vector<std::vector<TokenId>> prompts;
  std::vector<std::optional<std::vector<TokenId>>> answers;  // per prompt
};

struct ParseContext {
  const Model& model;
  const AnswerBook& answers;
  const ServeOptions& options;
  std::uint64_t fallback_seed;  // for sampling without a seed
};

// A POST body of /v1/completions, /v1/chat/completions, /v1/responses or /v1/messages. Throws
// ApiError.
ApiRequest parse_request(Endpoint endpoint, std::string_view text, const ParseContext& context);

// A POST body of /tokenize, vLLM's {"model", "prompt"} (or {"content"}, as llama.cpp names it):
// the text to tokenize. Throws ApiError.
std::string parse_tokenize(std::string_view text, const ServeOptions& options);

}  // namespace retrace::sim
