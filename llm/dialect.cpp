// Which wire dialect a request speaks, and the request fields that make each server return
// token ids (replay --token-ids).
#include <initializer_list>

#include <boost/json.hpp>

#include "base/json_edit.hpp"
#include "llm/llm.hpp"

namespace retrace::llm {

namespace json = boost::json;

std::string_view to_string(Dialect dialect) {
  switch (dialect) {
    case Dialect::unknown: return "";
    case Dialect::openai_completions: return "openai_completions";
    case Dialect::openai_chat: return "openai_chat";
    case Dialect::llamacpp_completion: return "llamacpp_completion";
    case Dialect::tgi_generate: return "tgi_generate";
    case Dialect::openai_responses: return "openai_responses";
    case Dialect::anthropic_messages: return "anthropic_messages";
    case Dialect::openai_embeddings: return "openai_embeddings";
  }
  return "";
}

namespace {

bool ends_with(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

// A request body's top-level keys as detection asks for them: from a body already parsed, or
// parsed here (once) the first time a path leaves the dialect open; most paths never do.
class BodyKeys {
 public:
  explicit BodyKeys(std::string_view text) : text_(text) {}
  explicit BodyKeys(const json::value& parsed) : object_(parsed.if_object()), parsed_(true) {}

  // Whether the body is a JSON object with any of `keys` at its top level.
  bool has_any(std::initializer_list<const char*> keys) {
    if (!parsed_) {
      json::error_code ec;
      own_ = json::parse(text_, ec);
      object_ = ec ? nullptr : own_.if_object();
      parsed_ = true;
    }
    if (!object_) return false;
    for (const char* key : keys) {
      if (object_->contains(key)) return true;
    }
    return false;
  }

 private:
  std::string_view text_;
  json::value own_;
  const json::object* object_ = nullptr;
  bool parsed_ = false;
};

// Keys only llama.cpp's native API takes; its /completions alias (no /v1) shares the OpenAI path.
bool has_llamacpp_native_keys(BodyKeys& body) {
  return body.has_any({"n_predict", "n_probs", "return_tokens", "cache_prompt", "id_slot", "n_keep"});
}

Dialect detect(std::string_view target, BodyKeys& request_body) {
  std::string_view path = target;
  if (const auto cut = path.find_first_of("?#"); cut != std::string_view::npos) path = path.substr(0, cut);
  // An absolute-form target ("http://host/v1/...") still ends with the path we look for.
  while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);

  if (ends_with(path, "/chat/completions")) return Dialect::openai_chat;
  if (ends_with(path, "/v1/responses") || path == "/responses") return Dialect::openai_responses;
  if (ends_with(path, "/v1/messages") || path == "/messages") return Dialect::anthropic_messages;
  if (ends_with(path, "/embeddings")) return Dialect::openai_embeddings;
  if (ends_with(path, "/completions")) {
    // llama.cpp serves its native API on /completion and /completions; the OpenAI one on
    // /v1/completions. A bare /completions is native only when the body says so.
    if (path == "/completions" && has_llamacpp_native_keys(request_body)) {
      return Dialect::llamacpp_completion;
    }
    return Dialect::openai_completions;
  }
  if (ends_with(path, "/completion")) return Dialect::llamacpp_completion;
  if (ends_with(path, "/generate_stream")) return Dialect::tgi_generate;
  if (ends_with(path, "/generate")) {
    // SGLang's native /generate ({"text"|"input_ids", "sampling_params"}) streams cumulative
    // text in another shape; it is not TGI's.
    return request_body.has_any({"sampling_params", "input_ids", "text"}) &&
                   !request_body.has_any({"inputs"})
               ? Dialect::unknown
               : Dialect::tgi_generate;
  }
  // TGI also serves generation on "/" (stream chosen by the body).
  if ((path == "/" || path.empty()) && request_body.has_any({"inputs"})) return Dialect::tgi_generate;
  return Dialect::unknown;
}

}  // namespace

Dialect detect_dialect(std::string_view target, std::string_view request_body) {
  BodyKeys keys(request_body);
  return detect(target, keys);
}

Dialect detect_dialect_of_parsed(std::string_view target, const json::value& request_body) {
  BodyKeys keys(request_body);
  return detect(target, keys);
}

bool names_model(Dialect dialect) {
  switch (dialect) {
    case Dialect::openai_completions:
    case Dialect::openai_chat:
    case Dialect::openai_responses:
    case Dialect::anthropic_messages:
    case Dialect::openai_embeddings: return true;
    case Dialect::llamacpp_completion:
    case Dialect::tgi_generate:
    case Dialect::unknown: return false;
  }
  return false;
}

bool is_inference_request(std::string_view target, std::string_view request_body) {
  if (detect_dialect(target, request_body) != Dialect::unknown) return true;
  std::string_view path = target;
  if (const auto cut = path.find_first_of("?#"); cut != std::string_view::npos) path = path.substr(0, cut);
  while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  for (std::string_view endpoint : {"/embeddings", "/embed", "/rerank", "/score", "/responses"})
    if (ends_with(path, endpoint)) return true;
  // SGLang's native /generate is generation too, in a shape the decoder does not know.
  return ends_with(path, "/generate");
}

std::optional<TokenIdMode> token_id_mode_from_string(std::string_view name) {
  if (name == "off" || name == "none") return TokenIdMode::off;
  if (name == "vllm") return TokenIdMode::vllm;
  if (name == "llamacpp" || name == "llama.cpp") return TokenIdMode::llamacpp;
  if (name == "logprobs") return TokenIdMode::logprobs;
  return std::nullopt;
}

std::string_view to_string(TokenIdMode mode) { return enum_name(mode, "off"); }

namespace {

// How many alternatives to ask for: two, so that the margin between the best and the runner-up
// is known at every position (what tells a near-tie flip from a real change).
constexpr int kTopAlternatives = 2;

// The fields to set, each with whether an existing value is acceptable as it is.
struct FieldChange {
  const char* key;
  json::value value;
  bool (*keep_existing)(const json::value&);  // nullptr: overwrite any existing value
};

bool is_true(const json::value& value) { return value.is_bool() && value.get_bool(); }
bool is_number(const json::value& value) { return value.is_number(); }
bool is_positive_number(const json::value& value) {
  json::error_code ec;
  return value.is_number() && value.to_number<double>(ec) >= 1 && !ec;
}

std::vector<FieldChange> changes_for(Dialect dialect, TokenIdMode mode) {
  std::vector<FieldChange> changes;
  switch (dialect) {
    case Dialect::openai_completions:
    case Dialect::openai_chat: {
      // Legacy completions take `logprobs: K` (K alternatives; 0 still returns the sampled token's
      // logprob); chat takes `logprobs: true` plus `top_logprobs: K`. llama.cpp's /v1 endpoints
      // answer either with token ids in the chat-style `content` shape, so llamacpp mode needs
      // nothing beyond logprobs there.
      if (dialect == Dialect::openai_completions) {
        changes.push_back({"logprobs", kTopAlternatives, is_number});
      } else {
        changes.push_back({"logprobs", true, is_true});
        changes.push_back({"top_logprobs", kTopAlternatives, is_number});
      }
      if (mode == TokenIdMode::vllm) {
        // vLLM only rewrites tokens as "token_id:N" inside logprobs, hence the logprobs above;
        // return_token_ids (vLLM >= 0.10.2) adds plain `token_ids` arrays per choice. Older
        // versions ignore the unknown field with a warning.
        changes.push_back({"return_tokens_as_token_ids", true, nullptr});
        changes.push_back({"return_token_ids", true, nullptr});
      }
      break;
    }
    case Dialect::llamacpp_completion:
      // Native /completion: `return_tokens` gives ids per event; `n_probs` gives logprobs and
      // alternatives (with ids and bytes) in `completion_probabilities`. Any mode asks for both:
      // this dialect has no other way to return ids.
      changes.push_back({"return_tokens", true, nullptr});
      changes.push_back({"n_probs", kTopAlternatives, is_positive_number});
      break;
    case Dialect::tgi_generate:
      // TGI streams token ids always; the non-stream answer has them only under `details`.
      // `top_n_tokens` (server limit --max-top-n-tokens, default 5) gives the alternatives.
      changes.push_back({"details", true, nullptr});
      changes.push_back({"top_n_tokens", kTopAlternatives, is_positive_number});
      break;
    case Dialect::openai_responses:
    case Dialect::anthropic_messages:
    case Dialect::openai_embeddings:
    case Dialect::unknown:
      break;  // no way to ask these for token ids: their text is compared
  }
  return changes;
}

}  // namespace

JsonEdit add_token_id_fields(json::object& body, Dialect dialect, TokenIdMode mode) {
  if (mode == TokenIdMode::off || dialect == Dialect::unknown) return JsonEdit::none;
  JsonEdit edit = JsonEdit::none;
  for (const FieldChange& change : changes_for(dialect, mode)) {
    const json::value* existing = body.if_contains(change.key);
    if (!existing) {
      body[change.key] = change.value;
      edit |= JsonEdit::added;
    } else if (!(change.keep_existing ? change.keep_existing(*existing) : *existing == change.value)) {
      body[change.key] = change.value;
      edit |= JsonEdit::changed;
    }
  }
  return edit;
}

std::string add_token_id_fields(std::string_view body, Dialect dialect, TokenIdMode mode) {
  if (mode == TokenIdMode::off || dialect == Dialect::unknown) return std::string(body);
  json::error_code ec;
  json::value parsed = json::parse(body, ec);
  if (ec || !parsed.is_object()) return std::string(body);
  json::object& object = parsed.get_object();
  const std::size_t members = object.size();
  const JsonEdit edit = add_token_id_fields(object, dialect, mode);
  return write_edited(body, object, members, edit);
}

}  // namespace retrace::llm
