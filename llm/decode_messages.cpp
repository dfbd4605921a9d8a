// Anthropic's Messages API (POST /v1/messages; Anthropic, vLLM, SGLang), one event or body, into
// the parts of choice 0 (trace.hpp):
//   streamed   each event's data names its "type" (the `event:` line repeats it):
//     message_start        {"message":{"usage":{"input_tokens","output_tokens"}}}
//     content_block_start  {"index","content_block":{"type":"text"|"thinking"|"redacted_thinking"|
//                           "tool_use","name"?}}: block `index` becomes a part; a tool_use takes
//                           the next tool call position, its name from the block
//     content_block_delta  {"index","delta":{"type":"text_delta","text"}|{"type":"thinking_delta",
//                           "thinking"}|{"type":"input_json_delta","partial_json"}}; a
//                           signature_delta is not generated text and is not read
//     message_delta        {"delta":{"stop_reason"},"usage":{"output_tokens"}}  (a running total)
//     message_stop         the end;  ping: nothing;  error {"error":{"type","message"}}
//   whole      {"type":"message","content":[{"type":"text","text"}|{"type":"thinking","thinking"}|
//              {"type":"tool_use","name","input":{..}}],"stop_reason","usage":{..}}: a whole
//              tool_use's input is an object, its arguments the object's JSON text
// The finish reason is stop_reason ("end_turn", "max_tokens", "tool_use", ...).
#include <boost/json/serialize.hpp>

#include "llm/decoder_impl.hpp"

namespace retrace::llm {

namespace {

std::optional<Part> block_part(std::string_view type) {
  if (type == "text") return Part::content;
  if (type == "thinking" || type == "redacted_thinking") return Part::reasoning;
  if (type == "tool_use") return Part::tool_call;
  return std::nullopt;
}

}  // namespace

void ResponseDecoder::Impl::read_messages(const json::object& root, std::int64_t offset_ns, bool streamed) {
  const auto type = string_field(root, "type").value_or("");
  if (!streamed || type == "message") {
    if (type != "message") {
      note(where() + ": not a Messages API message");
      return;
    }
    if (const json::object* usage_object = object_field(root, "usage")) read_message_usage(*usage_object);
    part_of(0, Part::content).finish_reason.assign(string_field(root, "stop_reason").value_or(""));
    if (const json::array* content = array_field(root, "content")) read_message_content(*content, offset_ns);
    return;
  }
  if (type == "message_start") {
    const json::object* message = object_field(root, "message");
    const json::object* usage_object = message ? object_field(*message, "usage") : nullptr;
    if (usage_object) read_message_usage(*usage_object);
    part_of(0, Part::content);
  } else if (type == "content_block_start") {
    const json::object* block = object_field(root, "content_block");
    const auto part = block ? block_part(string_field(*block, "type").value_or("")) : std::nullopt;
    if (!part) return;  // a server tool's block: nothing generated to compare
    const Item* made = item_at(integer_field(root, "index"), part);
    if (made && *part == Part::tool_call) {
      read_tool_call(0, made->call, string_field(*block, "id"), string_field(*block, "name"), std::nullopt, offset_ns);
    } else if (made && *part == Part::content) {
      add_text(Part::content, 0, string_field(*block, "text").value_or(""), offset_ns);
    }
  } else if (type == "content_block_delta") {
    const json::object* delta = object_field(root, "delta");
    const Item* item = delta ? item_at(integer_field(root, "index")) : nullptr;
    if (!item) return;
    const auto delta_type = string_field(*delta, "type").value_or("");
    if (delta_type == "text_delta") {
      add_text(item->part, item->call, string_field(*delta, "text").value_or(""), offset_ns);
    } else if (delta_type == "thinking_delta") {
      add_text(item->part, item->call, string_field(*delta, "thinking").value_or(""), offset_ns);
    } else if (delta_type == "input_json_delta") {
      add_text(item->part, item->call, string_field(*delta, "partial_json").value_or(""), offset_ns);
    }
  } else if (type == "message_delta") {
    if (const json::object* usage_object = object_field(root, "usage")) read_message_usage(*usage_object);
    const json::object* delta = object_field(root, "delta");
    if (const auto reason = delta ? string_field(*delta, "stop_reason") : std::nullopt) {
      part_of(0, Part::content).finish_reason.assign(*reason);
    }
  } else if (type == "message_stop") {
    finished = true;
  }
}

void ResponseDecoder::Impl::read_message_content(const json::array& content, std::int64_t offset_ns) {
  for (const json::value& block_value : content) {
    const json::object* block = block_value.if_object();
    if (!block) continue;
    const auto part = block_part(string_field(*block, "type").value_or(""));
    if (!part) continue;
    if (*part == Part::tool_call) {
      const json::value* input = field(*block, "input");
      const std::string arguments = input ? json::serialize(*input) : std::string();
      read_tool_call(0, tool_calls++, string_field(*block, "id"), string_field(*block, "name"), arguments, offset_ns);
    } else {
      add_text(*part, 0, string_field(*block, *part == Part::content ? "text" : "thinking").value_or(""), offset_ns);
    }
  }
}

void ResponseDecoder::Impl::read_message_usage(const json::object& usage_object) {
  if (const auto n = integer_field(usage_object, "input_tokens")) usage.prompt_tokens = *n;
  if (const auto n = integer_field(usage_object, "output_tokens")) usage.completion_tokens = *n;
  if (usage.prompt_tokens >= 0 && usage.completion_tokens >= 0) {
    usage.total_tokens = sum_of_counts(usage.prompt_tokens, usage.completion_tokens);
  }
}

}  // namespace retrace::llm
