// The request bodies of the Responses API (POST /v1/responses) and Anthropic's Messages API (POST
// /v1/messages) as `retrace serve` reads them (sim/api_fields.hpp): their conversation becomes the
// same chat prompt a chat completion's messages render to, so --answers, the prefix cache and
// --reasoning work alike on all three.
//   Responses  "instructions" (a system message), "input": a string, or items {"role", "content":
//              a string or parts {"type": "input_text"|"output_text", "text"}}, {"type":
//              "function_call", "name", "arguments"}, {"type": "function_call_output", "output"};
//              "tools": [{"type": "function", "name"}]
//   Messages   "system": a string or [{"type": "text", "text"}], "messages": [{"role", "content": a
//              string or blocks {"type": "text", "text"}, {"type": "tool_result", "content"}, ...}];
//              "tools": [{"name", "input_schema"}]
// A part or block that carries no text (an image, a tool_use) is kept as its JSON: its bytes are
// prompt, as a real model's prompt grows with them.
#include <string>

#include <boost/json.hpp>

#include "sim/api_fields.hpp"

namespace retrace::sim {
namespace {

namespace json = boost::json;

bool is_text_type(std::string_view type) {
  return type == "text" || type == "input_text" || type == "output_text";
}

// A message's content as prompt text: a string, or a list of parts or blocks.
std::string content_text(const json::value& content, const std::string& where) {
  if (content.is_string()) return std::string(content.get_string());
  if (content.is_null()) return {};
  if (!content.is_array()) reject(where, "'" + where + "' must be a string or a list of content parts");
  std::string text;
  const json::array& parts = content.get_array();
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const json::object* part = parts[i].if_object();
    const json::value* type = part ? part->if_contains("type") : nullptr;
    if (!type || !type->is_string())
      reject(where, "'" + where + "[" + std::to_string(i) + "]' must be an object with a \"type\"");
    const json::value* part_text = part->if_contains("text");
    if (is_text_type(type->get_string()) && part_text && part_text->is_string()) {
      text += part_text->get_string();
    } else if (type->get_string() == "tool_result" && part->if_contains("content")) {
      text += content_text(part->at("content"), where + "[" + std::to_string(i) + "].content");
    } else {
      text += json::serialize(*part);
    }
  }
  return text;
}

std::string role_of(const json::object& item, const std::string& where) {
  const json::value* role = item.if_contains("role");
  if (!role || !role->is_string()) reject(where + ".role", "'" + where + ".role' must be a string such as \"user\"");
  return std::string(role->get_string());
}

// One item of the Responses API's "input" list as a chat message; false for one that carries
// nothing the model reads (a reasoning item sent back).
bool read_input_item(const json::value& value, const std::string& where, ChatMessage& out) {
  const json::object* item = value.if_object();
  if (!item) reject(where, "'" + where + "' must be an object");
  const json::value* type_value = item->if_contains("type");
  // Both arms string_views: with a json::string and a literal the ?: made a temporary json::string,
  // and the view outlived it (ASan's stack-use-after-scope at -O1).
  const std::string_view type = type_value && type_value->is_string() ? std::string_view(type_value->get_string())
                                                                      : std::string_view("message");
  if (type == "message") {
    const json::value* content = item->if_contains("content");
    if (!content) reject(where + ".content", "'" + where + ".content' is missing");
    out = {role_of(*item, where), content_text(*content, where + ".content")};
  } else if (type == "function_call") {
    out = {"assistant", json::serialize(*item)};
  } else if (type == "function_call_output") {
    const json::value* output = item->if_contains("output");
    out = {"tool", output ? content_text(*output, where + ".output") : std::string()};
  } else if (type == "reasoning") {
    return false;
  } else {
    reject(where + ".type", "'" + where + ".type' must be \"message\", \"function_call\", \"function_call_output\" "
                                          "or \"reasoning\", got \"" + std::string(type) + "\"");
  }
  return true;
}

void set_prompt(const std::vector<ChatMessage>& messages, const ParseContext& context, ApiRequest& request) {
  const Tokenizer& tokenizer = context.model.tokenizer();
  request.prompts.push_back(tokenizer.encode(render_chat(messages)));
  if (const std::string* answer = context.answers.find_messages(messages))
    request.answers.emplace_back(tokenizer.encode(*answer));
  else
    request.answers.emplace_back();
}

// The name of the first tool in `tools` that `callable` says the model may call.
template <typename Callable>
void first_tool(const json::object& body, ApiRequest& request, std::string_view shape, Callable callable) {
  const json::value* tools = field(body, "tools");
  if (!tools) return;
  if (!tools->is_array()) reject("tools", "'tools' must be a list of " + std::string(shape));
  for (const json::value& tool : tools->get_array()) {
    const json::object* object = tool.if_object();
    if (!object) reject("tools", "every tool must be an object: " + std::string(shape));
    if (!callable(*object)) continue;  // a built-in tool (web_search, ...): never called here
    const json::value* name = object->if_contains("name");
    if (!name || !name->is_string() || name->get_string().empty())
      reject("tools", "every tool needs a \"name\": " + std::string(shape));
    request.tool_name = std::string(name->get_string());
    return;
  }
}

}  // namespace

void read_responses_input(const json::object& body, const ParseContext& context, ApiRequest& request) {
  std::vector<ChatMessage> messages;
  if (const json::value* instructions = field(body, "instructions")) {
    if (!instructions->is_string()) reject("instructions", "'instructions' must be a string");
    messages.push_back({"system", std::string(instructions->get_string())});
  }
  const json::value* input = field(body, "input");
  if (!input) reject("input", "missing required parameter 'input' (a string or a list of input items)");
  if (input->is_string()) {
    messages.push_back({"user", std::string(input->get_string())});
  } else if (input->is_array() && !input->get_array().empty()) {
    const json::array& items = input->get_array();
    for (std::size_t i = 0; i < items.size(); ++i) {
      ChatMessage message;
      if (read_input_item(items[i], "input[" + std::to_string(i) + "]", message)) messages.push_back(std::move(message));
    }
  } else {
    reject("input", "'input' must be a string or a non-empty list of input items");
  }
  set_prompt(messages, context, request);
}

void read_messages_input(const json::object& body, const ParseContext& context, ApiRequest& request) {
  std::vector<ChatMessage> messages;
  if (const json::value* system = field(body, "system")) messages.push_back({"system", content_text(*system, "system")});
  const json::value* list = field(body, "messages");
  if (!list || !list->is_array() || list->get_array().empty())
    reject("messages", "'messages' must be a non-empty list of {\"role\", \"content\"}");
  const json::array& items = list->get_array();
  for (std::size_t i = 0; i < items.size(); ++i) {
    const std::string where = "messages[" + std::to_string(i) + "]";
    const json::object* item = items[i].if_object();
    if (!item) reject(where, "'" + where + "' must be an object with 'role' and 'content'");
    const json::value* content = item->if_contains("content");
    if (!content) reject(where + ".content", "'" + where + ".content' is missing");
    messages.push_back({role_of(*item, where), content_text(*content, where + ".content")});
  }
  set_prompt(messages, context, request);
}

void read_shape_tools(const json::object& body, ApiRequest& request) {
  const json::value* choice = field(body, "tool_choice");
  if (request.endpoint == Endpoint::responses) {
    if (choice && choice->is_string() && choice->get_string() == "none") return;
    first_tool(body, request, "{\"type\": \"function\", \"name\": ...}", [](const json::object& tool) {
      const json::value* type = tool.if_contains("type");
      return type && type->is_string() && type->get_string() == "function";
    });
  } else {
    const json::object* choice_object = choice ? choice->if_object() : nullptr;
    const json::value* type = choice_object ? choice_object->if_contains("type") : nullptr;
    if (type && type->is_string() && type->get_string() == "none") return;
    first_tool(body, request, "{\"name\": ..., \"input_schema\": {...}}", [](const json::object&) { return true; });
  }
}

}  // namespace retrace::sim
