// OpenAI completions and chat (vLLM, SGLang, llama.cpp's /v1, OpenAI), one event or body:
//   completions  {"choices":[{"index","text","logprobs","finish_reason","token_ids"}],"usage"}
//   chat         {"choices":[{"index","delta"|"message":{"content","reasoning_content"|"reasoning",
//                 "refusal","tool_calls":[{"index"?,"id","function":{"name","arguments"}}]},
//                 "logprobs",...}],"usage"}
//     logprobs, legacy:   {"tokens":[..],"token_logprobs":[..],"top_logprobs":[{tok:lp}],"text_offset":[..]}
//     logprobs, chat:     {"content":[{"token","logprob","bytes":[..],"id"?,"top_logprobs":[..]}]}
//     vLLM: "token_id:N" token strings (return_tokens_as_token_ids); "token_ids":[..] per choice
//   usage        {"prompt_tokens","completion_tokens","total_tokens",
//                 "completion_tokens_details":{"reasoning_tokens"}} (SGLang: "reasoning_tokens" at the top)
// Each part of a chat message is its own token stream (trace.hpp): reasoning, content, refusal,
// and each tool call, named by its streamed "index" (its position in a whole message).
// The common streamed event also has a fast path (fast_event.cpp) that must decode as this does;
// it gives up on every field but content, so parts other than content always come through here.
#include <algorithm>

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
    if (const auto reason = string_field(*choice_object, "finish_reason")) {
      choice->finish_reason.assign(*reason);
    }
    const json::object* message = object_field(*choice_object, streamed ? "delta" : "message");
    if (!message) message = object_field(*choice_object, streamed ? "message" : "delta");
    const json::value* logprobs = field(*choice_object, "logprobs");
    const json::array* ids = array_field(*choice_object, "token_ids");
    if (message) {
      read_chat_parts(choice->index, *message, logprobs, ids, offset_ns);
    } else {
      read_tokens(*choice, string_field(*choice_object, "text"), logprobs, ids, offset_ns);
    }
  }
}

// A chat message or delta, each part into its own stream. The event's logprobs and token ids
// cover the text it carries in generation order (reasoning, content, refusal): with one part's
// text they are that part's tokens; with several (a whole message, a delta across the boundary)
// the tokens are read against the joined text and dealt out by their bytes, a token that
// straddles a boundary cut there (its id and logprob stay with its first bytes).
void ResponseDecoder::Impl::read_chat_parts(std::uint32_t index, const json::object& message,
                                            const json::value* logprobs, const json::array* ids,
                                            std::int64_t offset_ns) {
  auto reasoning = string_field(message, "reasoning_content");
  if (!reasoning) reasoning = string_field(message, "reasoning");
  const auto content = string_field(message, "content");
  const auto refusal = string_field(message, "refusal");
  const std::pair<Part, std::optional<std::string_view>> texts[] = {
      {Part::reasoning, reasoning}, {Part::content, content}, {Part::refusal, refusal}};
  std::vector<std::pair<Part, std::string_view>> with_text;
  for (const auto& [part, text] : texts)
    if (text && !text->empty()) with_text.emplace_back(part, *text);
  const bool has_tokens = (logprobs && !logprobs->is_null()) || ids;
  if (with_text.size() > 1 && has_tokens) {
    read_tokens_across_parts(index, with_text, logprobs, ids, offset_ns);
  } else if (has_tokens) {
    const Part part = with_text.empty() ? Part::content : with_text.front().first;
    read_tokens(part_of(index, part), with_text.empty() ? content : with_text.front().second, logprobs, ids,
                offset_ns);
  } else {
    for (const auto& [part, text] : with_text) add_token(part_of(index, part), offset_ns, BytesFrom::token_text).bytes.assign(text);
  }
  const json::array* tool_calls = array_field(message, "tool_calls");
  if (!tool_calls) return;
  std::uint32_t position = 0;
  for (const json::value& call : *tool_calls) {
    const json::object* call_object = call.if_object();
    const json::object* function = call_object ? object_field(*call_object, "function") : nullptr;
    if (!function) continue;
    std::uint32_t call_index = position++;
    if (!read_index(*call_object, "tool call", call_index)) continue;
    read_tool_call(index, call_index, string_field(*call_object, "id"), string_field(*function, "name"),
                   string_field(*function, "arguments"), offset_ns);
  }
}

void ResponseDecoder::Impl::read_tokens_across_parts(std::uint32_t index,
                                                     const std::vector<std::pair<Part, std::string_view>>& texts,
                                                     const json::value* logprobs, const json::array* ids,
                                                     std::int64_t offset_ns) {
  std::string joined;
  std::vector<std::size_t> ends;  // each part's end in `joined`
  for (const auto& [part, text] : texts) ends.push_back((joined += text).size());
  Choice scratch;
  scratch.index = index;
  read_tokens(scratch, joined, logprobs, ids, offset_ns);
  std::size_t at = 0, which = 0;
  for (Token& token : scratch.tokens) {
    std::string bytes = std::move(token.bytes);
    const std::int64_t arrived = token.offset_ns;
    std::size_t used = 0;
    do {
      while (which + 1 < texts.size() && at >= ends[which]) ++which;
      const std::size_t left = bytes.size() - used;
      const std::size_t room = which + 1 == texts.size() ? left : std::min(left, ends[which] - at);
      Choice& part = part_of(index, texts[which].first);
      Token& piece = used == 0 ? part.add_token(token, scratch.top(token)) : part.add_token(Token{}, {});
      piece.offset_ns = arrived;
      piece.bytes = bytes.substr(used, room);
      used += room;
      at += room;
    } while (used < bytes.size());
  }
}

void ResponseDecoder::Impl::read_tool_call(std::uint32_t index, std::uint32_t call, std::optional<std::string_view> id,
                                           std::optional<std::string_view> name,
                                           std::optional<std::string_view> arguments, std::int64_t offset_ns) {
  Choice& part = part_of(index, Part::tool_call, call);
  if (id && !id->empty() && &part != &dropped_part) {  // sent once, in the call's first delta
    PartSlot& slot = part_slots.at(PartKey{index, Part::tool_call, call});
    if (!slot.id_recorded) tool_call_ids.push_back({index, call, std::string(*id)});
    slot.id_recorded = true;
  }
  if (name) part.tool_name.append(*name);  // sent once, in the call's first delta
  if (arguments && !arguments->empty()) add_token(part, offset_ns, BytesFrom::token_text).bytes.assign(*arguments);
}

void ResponseDecoder::Impl::read_usage(const json::object& object) {
  const json::object* usage_object = object_field(object, "usage");
  if (!usage_object) return;
  if (const auto n = integer_field(*usage_object, "prompt_tokens")) usage.prompt_tokens = *n;
  if (const auto n = integer_field(*usage_object, "completion_tokens")) usage.completion_tokens = *n;
  if (const auto n = integer_field(*usage_object, "total_tokens")) usage.total_tokens = *n;
  if (const json::object* details = object_field(*usage_object, "completion_tokens_details")) {
    if (const auto n = integer_field(*details, "reasoning_tokens")) usage.reasoning_tokens = *n;
  } else if (const auto n = integer_field(*usage_object, "reasoning_tokens")) {
    usage.reasoning_tokens = *n;  // SGLang's UsageInfo has it at the top
  }
}

}  // namespace retrace::llm
