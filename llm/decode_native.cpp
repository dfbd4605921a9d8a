// The native dialects, one event or body:
//   llama.cpp /completion  {"index","content","tokens":[..],"completion_probabilities":[..],"stop",
//                           "stop_type","tokens_predicted","tokens_evaluated"}
//   TGI                    {"token":{"id","text","logprob","special"},"top_tokens","generated_text",
//                           "details"}  /  {"generated_text","details":{"tokens":[..],...}}
#include "llm/decoder_impl.hpp"

namespace retrace::llm {

namespace {

std::string_view finish_reason_of_llamacpp(std::string_view stop_type) {
  if (stop_type == "limit") return "length";
  if (stop_type == "eos" || stop_type == "word") return "stop";
  return stop_type == "none" ? "" : stop_type;
}

std::string_view finish_reason_of_tgi(std::string_view reason) {
  if (reason == "eos_token" || reason == "stop_sequence") return "stop";
  return reason;  // "length" is already the OpenAI spelling
}

}  // namespace

void ResponseDecoder::Impl::read_llamacpp(const json::object& root, std::int64_t offset_ns) {
  if (!root.contains("content") && !root.contains("tokens") && !root.contains("completion_probabilities") &&
      !root.contains("stop")) {
    note(where() + ": not a llama.cpp completion object");
    return;
  }
  Choice* choice = choice_at(root);
  if (!choice) return;
  const std::size_t first = choice->tokens.size();
  bytes_from.clear();
  const auto content = string_field(root, "content");
  if (const json::array* probabilities = array_field(root, "completion_probabilities")) {
    read_content_logprobs(*choice, *probabilities, offset_ns);
  }
  if (const json::array* ids = array_field(root, "tokens"); ids && !ids->empty()) {
    apply_id_array(*choice, first, *ids, offset_ns);
  }
  if (choice->tokens.size() == first) {
    if (content && !content->empty()) add_token(*choice, offset_ns, BytesFrom::token_text).bytes.assign(*content);
  } else {
    settle_bytes(*choice, first, content, nullptr);
  }
  if (bool_field(root, "stop")) {
    finished = true;
    if (const auto stop_type = string_field(root, "stop_type")) {
      choice->finish_reason.assign(finish_reason_of_llamacpp(*stop_type));
    }
    const auto predicted = integer_field(root, "tokens_predicted");
    const auto evaluated = integer_field(root, "tokens_evaluated");
    if (predicted) usage.completion_tokens = *predicted;
    if (evaluated) usage.prompt_tokens = *evaluated;
    if (predicted && evaluated) usage.total_tokens = sum_of_counts(*predicted, *evaluated);
  }
}

Token& ResponseDecoder::Impl::read_tgi_token(Choice& choice, const json::object& token_object,
                                             std::int64_t offset_ns) {
  Token& token = add_token(choice, offset_ns, BytesFrom::token_text);
  if (const json::value* id = field(token_object, "id")) token.id = token_id_of(*id);
  // TGI's generated_text leaves special tokens out (clients skip them by `special`); they stay
  // here as tokens with their id and logprob but no bytes, so the text matches generated_text.
  if (!bool_field(token_object, "special")) {
    if (const auto text = string_field(token_object, "text")) token.bytes.assign(*text);
  }
  if (const auto logprob = number_field(token_object, "logprob")) {
    token.has_logprob = true;
    token.logprob = to_float(*logprob);
  }
  return token;
}

void ResponseDecoder::Impl::read_tgi_alternatives(Choice& choice, Token& token, const json::array& top) {
  for (const json::value& value : top) {
    const json::object* object = value.if_object();
    if (!object) continue;
    Alternative& alternative = choice.add_alternative(token);
    if (const json::value* id = field(*object, "id")) alternative.id = token_id_of(*id);
    if (const auto text = string_field(*object, "text")) alternative.bytes.assign(*text);
    alternative.logprob = logprob_of(*object).value_or(0);
  }
  sort_best_first(choice.top(token));
}

void ResponseDecoder::Impl::read_tgi_details(Choice& choice, const json::object& details) {
  if (const auto reason = string_field(details, "finish_reason")) {
    choice.finish_reason.assign(finish_reason_of_tgi(*reason));
  }
  const auto generated = integer_field(details, "generated_tokens");
  const auto input = integer_field(details, "input_length");
  if (generated) usage.completion_tokens = *generated;
  if (input) usage.prompt_tokens = *input;
  if (generated && input) usage.total_tokens = sum_of_counts(*generated, *input);
}

void ResponseDecoder::Impl::read_tgi_stream(const json::object& root, std::int64_t offset_ns) {
  // TGI streams one sequence; its "index" counts tokens, it does not name a choice.
  Choice* choice = &choice_with_index(0);
  if (const json::object* token_object = object_field(root, "token")) {
    Token& token = read_tgi_token(*choice, *token_object, offset_ns);
    if (const json::array* top = array_field(root, "top_tokens")) read_tgi_alternatives(*choice, token, *top);
  } else {
    note(where() + ": no \"token\" object");
  }
  if (const json::object* details = object_field(root, "details")) read_tgi_details(*choice, *details);
  const json::value* generated_text = field(root, "generated_text");
  if (generated_text && !generated_text->is_null()) finished = true;
}

void ResponseDecoder::Impl::read_tgi_body(const json::object& root, std::uint32_t index, std::int64_t offset_ns) {
  Choice* choice = &choice_with_index(index);
  const auto generated_text = string_field(root, "generated_text");
  const json::object* details = object_field(root, "details");
  const json::array* tokens = details ? array_field(*details, "tokens") : nullptr;
  const json::array* top_tokens = details ? array_field(*details, "top_tokens") : nullptr;
  if (tokens) {
    for (std::size_t i = 0; i < tokens->size(); ++i) {
      const json::object* token_object = (*tokens)[i].if_object();
      if (!token_object) continue;
      Token& token = read_tgi_token(*choice, *token_object, offset_ns);
      if (top_tokens && i < top_tokens->size()) {
        if (const json::array* top = (*top_tokens)[i].if_array()) read_tgi_alternatives(*choice, token, *top);
      }
    }
  } else if (generated_text && !generated_text->empty()) {
    add_token(*choice, offset_ns, BytesFrom::token_text).bytes.assign(*generated_text);
  }
  if (details) read_tgi_details(*choice, *details);
}

}  // namespace retrace::llm
