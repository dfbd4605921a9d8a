// OpenAI completions and chat (vLLM, SGLang, llama.cpp's /v1, OpenAI), one event or body:
//   completions  {"choices":[{"index","text","logprobs","finish_reason","token_ids"}],"usage"}
//   chat         {"choices":[{"index","delta"|"message":{"content"},"logprobs",...}],"usage"}
//     logprobs, legacy:   {"tokens":[..],"token_logprobs":[..],"top_logprobs":[{tok:lp}],"text_offset":[..]}
//     logprobs, chat:     {"content":[{"token","logprob","bytes":[..],"id"?,"top_logprobs":[..]}]}
//     vLLM: "token_id:N" token strings (return_tokens_as_token_ids); "token_ids":[..] per choice
// The common streamed event also has a fast path (fast_event.cpp) that must decode as this does.
#include "llm/decoder_impl.hpp"

namespace retrace::llm {

void ResponseDecoder::Impl::read_openai(const json::object& root, std::int64_t offset_ns, bool streamed) {
  read_usage(root);
  const json::array* choice_array = array_field(root, "choices");
  if (!choice_array) {
    if (!field(root, "usage")) note(where() + ": no \"choices\" array");
    return;
  }
  for (const json::value& choice_value : *choice_array) {
    const json::object* choice_object = choice_value.if_object();
    if (!choice_object) continue;
    Choice* choice = choice_at(*choice_object);
    if (!choice) continue;

    std::optional<std::string_view> text = string_field(*choice_object, "text");
    const json::object* message = object_field(*choice_object, streamed ? "delta" : "message");
    if (!message) message = object_field(*choice_object, streamed ? "message" : "delta");
    if (message) text = chat_text(*message);
    read_tokens(*choice, text, field(*choice_object, "logprobs"), array_field(*choice_object, "token_ids"),
                offset_ns);
    if (const auto reason = string_field(*choice_object, "finish_reason")) {
      choice->finish_reason.assign(*reason);
    }
  }
}

void ResponseDecoder::Impl::read_usage(const json::object& object) {
  const json::object* usage_object = object_field(object, "usage");
  if (!usage_object) return;
  if (const auto n = integer_field(*usage_object, "prompt_tokens")) usage.prompt_tokens = *n;
  if (const auto n = integer_field(*usage_object, "completion_tokens")) usage.completion_tokens = *n;
  if (const auto n = integer_field(*usage_object, "total_tokens")) usage.total_tokens = *n;
}

// Everything the model generated in a chat message or delta, in the order servers generate it:
// reasoning, content, refusal, tool call names and arguments. Usually just `content`, returned
// as a view; nullopt when there is none (a role-only delta).
std::optional<std::string_view> ResponseDecoder::Impl::chat_text(const json::object& message) {
  auto reasoning = string_field(message, "reasoning_content");
  if (!reasoning) reasoning = string_field(message, "reasoning");
  const auto content = string_field(message, "content");
  const auto refusal = string_field(message, "refusal");
  const json::array* tool_calls = array_field(message, "tool_calls");
  if (!reasoning && !refusal && (!tool_calls || tool_calls->empty())) return content;
  joined_text.clear();
  joined_text.append(reasoning.value_or(""));
  joined_text.append(content.value_or(""));
  joined_text.append(refusal.value_or(""));
  if (tool_calls) {
    for (const json::value& call : *tool_calls) {
      const json::object* call_object = call.if_object();
      const json::object* function = call_object ? object_field(*call_object, "function") : nullptr;
      if (!function) continue;
      joined_text.append(string_field(*function, "name").value_or(""));
      joined_text.append(string_field(*function, "arguments").value_or(""));
    }
  }
  return std::string_view(joined_text);
}

}  // namespace retrace::llm
