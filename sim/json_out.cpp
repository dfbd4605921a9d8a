#include "sim/json_out.hpp"

#include <algorithm>

#include "base/text.hpp"

namespace retrace::sim {
namespace {

constexpr char kHex[] = "0123456789abcdef";

void put_logprob(std::string& out, float logprob) {
  put_number(out, std::max(logprob, -9999.0f));  // vLLM's clamp, so -inf never reaches JSON
}

// A token as logprobs name it: its text; "token_id:N" with vLLM's return_tokens_as_token_ids;
// "bytes:\xNN" (tiktoken's convention) for a piece of a UTF-8 character.
void put_token_label(std::string& out, const Tokenizer& tokenizer, TokenId token, bool as_ids) {
  if (as_ids) {
    out += "\"token_id:";
    put_number(out, token);
    out += '"';
    return;
  }
  std::string_view bytes = tokenizer.token_bytes(token);
  if (is_valid_utf8(bytes)) return put_string(out, bytes);
  out += "\"bytes:";
  for (char c : bytes) {
    out += "\\\\x";
    out += kHex[static_cast<unsigned char>(c) >> 4];
    out += kHex[static_cast<unsigned char>(c) & 15];
  }
  out += '"';
}

void put_token_bytes(std::string& out, const Tokenizer& tokenizer, TokenId token) {
  out += '[';
  bool first = true;
  for (char c : tokenizer.token_bytes(token)) {
    if (!first) out += ',';
    first = false;
    put_number(out, int(static_cast<unsigned char>(c)));
  }
  out += ']';
}

// {"token","logprob","bytes"} of one token, as chat's logprobs entries and their alternatives say it.
void put_chat_token(std::string& out, const Tokenizer& tokenizer, TokenId token, float logprob, bool as_ids) {
  out += "{\"token\":";
  put_token_label(out, tokenizer, token, as_ids);
  out += ",\"logprob\":";
  put_logprob(out, logprob);
  out += ",\"bytes\":";
  put_token_bytes(out, tokenizer, token);
}

void put_chat_logprobs(std::string& out, const Tokenizer& tokenizer, bool as_ids,
                       std::span<const GeneratedToken> tokens) {
  out += "{\"content\":[";
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    const GeneratedToken& token = tokens[i];
    if (i) out += ',';
    put_chat_token(out, tokenizer, token.token, token.logprob, as_ids);
    out += ",\"top_logprobs\":[";
    for (std::size_t k = 0; k < token.top.size(); ++k) {
      if (k) out += ',';
      put_chat_token(out, tokenizer, token.top[k].token, token.top[k].logprob, as_ids);
      out += '}';
    }
    out += "]}";
  }
  out += "]}";
}

// OpenAI's legacy shape: parallel lists; each top_logprobs entry maps token text to logprob and,
// as vLLM does, always includes the sampled token.
void put_completion_logprobs(std::string& out, const Tokenizer& tokenizer, bool as_ids,
                             std::span<const GeneratedToken> tokens, std::size_t& text_offset) {
  out += "{\"tokens\":[";
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    if (i) out += ',';
    put_token_label(out, tokenizer, tokens[i].token, as_ids);
  }
  out += "],\"token_logprobs\":[";
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    if (i) out += ',';
    put_logprob(out, tokens[i].logprob);
  }
  out += "],\"top_logprobs\":[";
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    const GeneratedToken& token = tokens[i];
    if (i) out += ',';
    out += '{';
    bool sampled_listed = false;
    for (std::size_t k = 0; k < token.top.size(); ++k) {
      if (k) out += ',';
      put_token_label(out, tokenizer, token.top[k].token, as_ids);
      out += ':';
      put_logprob(out, token.top[k].logprob);
      sampled_listed |= token.top[k].token == token.token;
    }
    if (!sampled_listed) {
      if (!token.top.empty()) out += ',';
      put_token_label(out, tokenizer, token.token, as_ids);
      out += ':';
      put_logprob(out, token.logprob);
    }
    out += '}';
  }
  out += "],\"text_offset\":[";
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    if (i) out += ',';
    put_number(out, text_offset);
    text_offset += tokenizer.token_bytes(tokens[i].token).size();
  }
  out += "]}";
}

}  // namespace

void put_string(std::string& out, std::string_view text) {
  out += '"';
  std::size_t plain_from = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out.append(text.data() + plain_from, i - plain_from);
    plain_from = i + 1;
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        out += "\\u00";
        out += kHex[c >> 4];
        out += kHex[c & 15];
    }
  }
  out.append(text.data() + plain_from, text.size() - plain_from);
  out += '"';
}

void put_token_ids(std::string& out, std::span<const TokenId> tokens) {
  out += '[';
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    if (i) out += ',';
    put_number(out, tokens[i]);
  }
  out += ']';
}

void put_response_head(std::string& out, std::string_view id, std::string_view object, std::int64_t created,
                       std::string_view model_name, std::uint64_t weights_seed) {
  out += "{\"id\":";
  put_string(out, id);
  out += ",\"object\":";
  put_string(out, object);
  out += ",\"created\":";
  put_number(out, created);
  out += ",\"model\":";
  put_string(out, model_name);
  out += ",\"system_fingerprint\":\"fp_retrace_sim_";
  put_number(out, weights_seed);
  out += "\",\"choices\":[";
}

void put_finish(std::string& out, const Generation& generation, bool finished, bool tool_call) {
  out += ",\"finish_reason\":";
  if (!finished) out += "null";
  else if (tool_call) out += "\"tool_calls\"";
  else out += generation.finish_reason() == FinishReason::length ? "\"length\"" : "\"stop\"";
  out += ",\"stop_reason\":";
  if (finished && !generation.matched_stop().empty()) put_string(out, generation.matched_stop());
  else out += "null";
}

void put_usage(std::string& out, std::size_t prompt_tokens, std::size_t completion_tokens,
               std::optional<std::size_t> cached_tokens, std::optional<std::size_t> reasoning_tokens) {
  out += "\"usage\":{\"prompt_tokens\":";
  put_number(out, prompt_tokens);
  out += ",\"total_tokens\":";
  put_number(out, prompt_tokens + completion_tokens);
  out += ",\"completion_tokens\":";
  put_number(out, completion_tokens);
  if (cached_tokens) {
    out += ",\"prompt_tokens_details\":{\"cached_tokens\":";
    put_number(out, *cached_tokens);
    out += '}';
  }
  if (reasoning_tokens) {
    out += ",\"completion_tokens_details\":{\"reasoning_tokens\":";
    put_number(out, *reasoning_tokens);
    out += '}';
  }
  out += '}';
}

void put_request_metrics(std::string& out, const RequestTimings& timings) {
  out += "\"metrics\":{\"queue_time_ms\":";
  put_number(out, timings.queue_ms);
  out += ",\"time_to_first_token_ms\":";
  put_number(out, timings.ttft_ms);
  out += ",\"generation_time_ms\":";
  put_number(out, timings.generation_ms);
  out += ",\"mean_itl_ms\":";
  if (timings.completion_tokens > 1) put_number(out, timings.generation_ms / double(timings.completion_tokens - 1));
  else out += "null";
  out += ",\"tokens_per_second\":";
  const double seconds = (timings.ttft_ms + timings.generation_ms) / 1000.0;
  put_number(out, seconds > 0 ? double(timings.completion_tokens) / seconds : 0.0);
  out += '}';
}

void put_logprobs(std::string& out, const Tokenizer& tokenizer, LogprobsShape shape,
                  std::span<const GeneratedToken> tokens, std::size_t& text_offset) {
  if (!shape.wanted) out += "null";
  else if (shape.chat) put_chat_logprobs(out, tokenizer, shape.as_ids, tokens);
  else put_completion_logprobs(out, tokenizer, shape.as_ids, tokens, text_offset);
}

}  // namespace retrace::sim
