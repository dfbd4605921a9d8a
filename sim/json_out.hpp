// JSON output of `retrace serve`. Responses are written by hand into a std::string: the streaming
// path formats one event per token and must not allocate per token.
#pragma once

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/engine.hpp"

namespace retrace::sim {

void put_string(std::string& out, std::string_view text);

template <typename Number>
void put_number(std::string& out, Number value) {
  char digits[32];
  auto result = std::to_chars(digits, digits + sizeof digits, value);
  out.append(digits, result.ptr);
}

void put_token_ids(std::string& out, std::span<const TokenId> tokens);

// The fields every completion response and chunk opens with, through `"choices":[`:
// {"id":...,"object":...,"created":...,"model":...,"system_fingerprint":...,"choices":[
void put_response_head(std::string& out, std::string_view id, std::string_view object, std::int64_t created,
                       std::string_view model_name, std::uint64_t weights_seed);

// ,"finish_reason":...,"stop_reason":... of a choice (null while it is not finished);
// "tool_calls" for an answer that called a tool.
void put_finish(std::string& out, const Generation& generation, bool finished, bool tool_call = false);

// "usage":{"prompt_tokens","total_tokens","completion_tokens"}; `cached_tokens`, when given, as vLLM
// reports prefix-cache hits (prompt_tokens_details.cached_tokens); `reasoning_tokens`, when given,
// as "completion_tokens_details":{"reasoning_tokens"} (serve --reasoning).
void put_usage(std::string& out, std::size_t prompt_tokens, std::size_t completion_tokens,
               std::optional<std::size_t> cached_tokens = std::nullopt,
               std::optional<std::size_t> reasoning_tokens = std::nullopt);

// vLLM's per-request metrics (--enable-per-request-metrics), in its final usage chunk or its
// body: "metrics":{"queue_time_ms" (arrival to scheduled), "time_to_first_token_ms" (scheduled to
// first token), "generation_time_ms" (first token to last), "mean_itl_ms" (that over the tokens
// after the first; null for one token), "tokens_per_second"}.
struct RequestTimings {
  double queue_ms = 0, ttft_ms = 0, generation_ms = 0;
  std::size_t completion_tokens = 0;
};
void put_request_metrics(std::string& out, const RequestTimings& timings);

// How a request wants its logprobs written.
struct LogprobsShape {
  bool wanted = false;  // else the field is null
  bool chat = false;    // chat's {"content": [...]} entries, else the completions' parallel lists
  bool as_ids = false;  // vLLM's return_tokens_as_token_ids: "token_id:N" labels
};

// The logprobs of `tokens`. `text_offset` is the completions' text_offset of the first token; it
// advances past them.
void put_logprobs(std::string& out, const Tokenizer& tokenizer, LogprobsShape shape,
                  std::span<const GeneratedToken> tokens, std::size_t& text_offset);

}  // namespace retrace::sim
