// OpenAI's Responses API (POST /v1/responses; OpenAI, vLLM, SGLang), one event or body, into the
// parts of choice 0 (trace.hpp):
//   streamed   each event's data names its "type" (the `event:` line repeats it):
//     response.output_item.added           {"output_index","item":{"type":"message"|"reasoning"|
//                                            "function_call","name"?}}: a function call takes the
//                                            next tool call position, its name from the item
//     response.output_text.delta           {"output_index","content_index","delta"}  content
//     response.refusal.delta               {"delta"}                                 refusal
//     response.reasoning_text.delta        {"delta"}  (also response.reasoning.delta, whose delta
//                                            older vLLM sent as {"content"}, and the summary
//     response.reasoning_summary_text.delta {"delta"}  OpenAI sends instead)       reasoning
//     response.function_call_arguments.delta {"output_index","delta"}                that call
//     response.completed | .incomplete | .failed {"response":{"status","usage",
//                                            "incomplete_details":{"reason"},"error"}}: the end
//     error                                {"code","message"}
//   whole      {"object":"response","status","output":[items as above, whole: message
//              "content":[{"type":"output_text","text"}|{"type":"refusal","refusal"}], reasoning
//              "content":[{"type":"reasoning_text","text"}] and "summary":[{"text"}],
//              function_call "name","arguments"],"usage":{"input_tokens","output_tokens",
//              "total_tokens","output_tokens_details":{"reasoning_tokens"}}}
// The finish reason is the status ("completed"), or why it is incomplete ("max_output_tokens").
// The *.done events repeat what the deltas said and are not read; neither is the whole response
// that response.completed repeats, except its status and usage.
#include "llm/decoder_impl.hpp"

namespace retrace::llm {

namespace {

bool starts_with(std::string_view text, std::string_view prefix) { return text.substr(0, prefix.size()) == prefix; }
bool ends_with(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

std::optional<Part> item_part(std::string_view type) {
  if (type == "message") return Part::content;
  if (type == "reasoning") return Part::reasoning;
  if (type == "function_call") return Part::tool_call;
  return std::nullopt;
}

// A failed response: the exchange's ErrorKind::server_error (decoder.cpp, classify_failure), as a
// chat stream's error event is, with the server's message, else what said it failed. (A template:
// ResponseDecoder::Impl is private, and its members call this with *this.)
template <class Decoder>
void fail_response(Decoder& impl, std::string_view message, std::string_view what) {
  const std::string text = message.empty() ? std::string(what) : std::string(message);
  impl.note(impl.where() + ": server error: " + text.substr(0, 200));
  if (!impl.server_error) impl.server_error = impl.where() + ": " + text.substr(0, 500);
}

}  // namespace

void ResponseDecoder::Impl::read_responses(const json::object& root, std::int64_t offset_ns, bool streamed) {
  const auto type = string_field(root, "type");
  if (!streamed || !type) {
    if (!streamed && string_field(root, "object") == "response") {
      read_response_object(root, offset_ns);
    } else {
      note(where() + ": not a Responses API " + (streamed ? "event" : "object"));
    }
    return;
  }
  // vLLM before 0.11 sent reasoning deltas as {"content": "..."} where the API has a string.
  std::string_view delta = string_field(root, "delta").value_or("");
  if (const json::object* delta_object = object_field(root, "delta")) {
    delta = string_field(*delta_object, "content").value_or(string_field(*delta_object, "text").value_or(""));
  }
  if (*type == "response.output_item.added") {
    const json::object* item = object_field(root, "item");
    const auto part = item ? item_part(string_field(*item, "type").value_or("")) : std::nullopt;
    if (!part) return;  // a built-in tool's item (web search, ...): nothing generated to compare
    const Item* made = item_at(integer_field(root, "output_index"), part);
    if (made && *part == Part::tool_call) {
      read_tool_call(0, made->call, string_field(*item, "call_id"), string_field(*item, "name"), std::nullopt, offset_ns);
    }
  } else if (*type == "response.output_text.delta") {
    add_text(Part::content, 0, delta, offset_ns);
  } else if (*type == "response.refusal.delta") {
    add_text(Part::refusal, 0, delta, offset_ns);
  } else if (starts_with(*type, "response.reasoning") && ends_with(*type, ".delta")) {
    add_text(Part::reasoning, 0, delta, offset_ns);
  } else if (*type == "response.function_call_arguments.delta") {
    if (const Item* item = item_at(integer_field(root, "output_index"))) {
      if (item->part == Part::tool_call) {
        add_text(Part::tool_call, item->call, delta, offset_ns);
      } else {
        note(where() + ": function call arguments for an output item that is not a call");
      }
    }
  } else if (*type == "response.completed" || *type == "response.incomplete" || *type == "response.failed") {
    finished = true;
    if (const json::object* response = object_field(root, "response")) {
      if (const json::object* usage_object = object_field(*response, "usage")) read_response_usage(*usage_object);
      const json::object* error = object_field(*response, "error");
      const auto status = string_field(*response, "status").value_or("");
      // A failed response is the server's error, as a chat stream's error event is.
      if (error || *type == "response.failed" || status == "failed")
        fail_response(*this, error ? string_field(*error, "message").value_or("") : "", *type);
      const json::object* incomplete = object_field(*response, "incomplete_details");
      const auto reason = incomplete ? string_field(*incomplete, "reason") : std::nullopt;
      part_of(0, Part::content).finish_reason.assign(reason.value_or(status));
    }
  } else if (*type == "error") {
    fail_response(*this, string_field(root, "message").value_or(""), "error");
  }
}

// The exchange's ErrorKind::server_error (decoder.cpp, classify_failure), with the server's message,
// else what said it failed.

void ResponseDecoder::Impl::read_response_object(const json::object& response, std::int64_t offset_ns) {
  if (const json::object* usage_object = object_field(response, "usage")) read_response_usage(*usage_object);
  Choice& answer = part_of(0, Part::content);
  const json::object* incomplete = object_field(response, "incomplete_details");
  const auto reason = incomplete ? string_field(*incomplete, "reason") : std::nullopt;
  answer.finish_reason.assign(reason.value_or(string_field(response, "status").value_or("")));
  if (string_field(response, "status") == "failed") {
    const json::object* error = object_field(response, "error");
    fail_response(*this, error ? string_field(*error, "message").value_or("") : "", "status failed");
  }
  const json::array* output = array_field(response, "output");
  if (!output) {
    note(where() + ": no \"output\" array");
    return;
  }
  for (const json::value& item_value : *output) {
    const json::object* item = item_value.if_object();
    if (!item) continue;
    const auto type = string_field(*item, "type").value_or("");
    if (type == "function_call") {
      read_tool_call(0, tool_calls++, string_field(*item, "call_id"), string_field(*item, "name"),
                     string_field(*item, "arguments"), offset_ns);
      continue;
    }
    const auto part = item_part(type);
    if (!part) continue;
    for (const char* list : {"summary", "content"}) {
      const json::array* pieces = array_field(*item, list);
      if (!pieces) continue;
      for (const json::value& piece_value : *pieces) {
        const json::object* piece = piece_value.if_object();
        if (!piece) continue;
        if (string_field(*piece, "type") == "refusal") {
          add_text(Part::refusal, 0, string_field(*piece, "refusal").value_or(""), offset_ns);
        } else {
          add_text(*part, 0, string_field(*piece, "text").value_or(""), offset_ns);
        }
      }
    }
  }
}

void ResponseDecoder::Impl::read_response_usage(const json::object& usage_object) {
  if (const auto n = integer_field(usage_object, "input_tokens")) usage.prompt_tokens = *n;
  if (const auto n = integer_field(usage_object, "output_tokens")) usage.completion_tokens = *n;
  if (const auto n = integer_field(usage_object, "total_tokens")) usage.total_tokens = *n;
  if (const json::object* details = object_field(usage_object, "output_tokens_details")) {
    if (const auto n = integer_field(*details, "reasoning_tokens")) usage.reasoning_tokens = *n;
  }
}

}  // namespace retrace::llm
