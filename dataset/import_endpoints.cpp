// The request bodies of `retrace import`'s endpoints (see import_endpoints.hpp).
#include "dataset/import_endpoints.hpp"

#include <array>
#include <string>

#include "base/ascii.hpp"
#include "format/trace.hpp"

namespace retrace {

namespace json = boost::json;

namespace {

struct EndpointName {
  ImportEndpoint endpoint;
  std::string_view name, path;
};

constexpr std::array<EndpointName, 5> kEndpoints{{
    {ImportEndpoint::chat, "chat", "/v1/chat/completions"},
    {ImportEndpoint::completions, "completions", "/v1/completions"},
    {ImportEndpoint::responses, "responses", "/v1/responses"},
    {ImportEndpoint::messages, "messages", "/v1/messages"},
    {ImportEndpoint::embeddings, "embeddings", "/v1/embeddings"},
}};

// The system messages' content as the Messages API's "system": their texts joined, or the one
// system message's content parts as they are.
json::value system_of(const std::vector<const json::value*>& contents) {
  if (contents.size() == 1) return *contents.front();
  std::string joined;
  for (const json::value* content : contents) {
    if (!content->is_string())
      throw TraceError("several system messages with content parts cannot become the Messages API's one "
                       "\"system\"; give their content as strings");
    if (!joined.empty()) joined += "\n\n";
    joined += content->get_string();
  }
  return json::string(joined);
}

}  // namespace

std::optional<ImportEndpoint> import_endpoint(std::string_view name) {
  for (const EndpointName& entry : kEndpoints)
    if (entry.name == name) return entry.endpoint;
  return std::nullopt;
}

std::string_view endpoint_path(ImportEndpoint endpoint) { return kEndpoints[std::size_t(endpoint)].path; }

std::optional<ImportEndpoint> endpoint_of_path(std::string_view path) {
  for (const EndpointName& entry : kEndpoints)
    if (entry.path == path) return entry.endpoint;
  return std::nullopt;
}

bool rejects_temperature(std::string_view model) {
  if (auto slash = model.rfind('/'); slash != std::string_view::npos) model.remove_prefix(slash + 1);
  auto lower = ascii_lower(model);
  std::string_view name = lower;
  const bool o_series = name.size() >= 2 && name[0] == 'o' && name[1] >= '1' && name[1] <= '9';
  const bool gpt5_reasoning = name.starts_with("gpt-5") && name.find("chat") == std::string_view::npos;
  return o_series || gpt5_reasoning;
}

void put_prompt(json::object& body, ImportEndpoint endpoint, const json::value& prompt) {
  switch (endpoint) {
    case ImportEndpoint::completions: body["prompt"] = prompt; return;
    case ImportEndpoint::responses:
    case ImportEndpoint::embeddings: body["input"] = prompt; return;
    case ImportEndpoint::chat:
    case ImportEndpoint::messages:
      body["messages"] = json::array{json::object{{"role", "user"}, {"content", prompt}}};
      return;
  }
}

void put_messages(json::object& body, ImportEndpoint endpoint, const json::array& messages) {
  switch (endpoint) {
    case ImportEndpoint::completions:
      throw TraceError("\"messages\" needs a chat-like endpoint; drop --endpoint completions or use \"prompt\"");
    case ImportEndpoint::embeddings:
      throw TraceError("\"messages\" cannot be embedded; --endpoint embeddings takes \"prompt\" lines");
    case ImportEndpoint::chat: body["messages"] = messages; return;
    case ImportEndpoint::responses: body["input"] = messages; return;  // its input items take messages
    case ImportEndpoint::messages: break;
  }
  json::array turns;
  std::vector<const json::value*> system;
  for (const json::value& message : messages) {
    const json::object& object = message.get_object();
    const json::value* role = object.if_contains("role");
    const json::value* content = object.if_contains("content");
    if (role && role->is_string() && (role->get_string() == "system" || role->get_string() == "developer")) {
      if (content) system.push_back(content);
      continue;
    }
    turns.push_back(message);
  }
  if (turns.empty()) throw TraceError("\"messages\" has only system messages; the Messages API needs a user turn");
  if (!system.empty()) body["system"] = system_of(system);
  body["messages"] = std::move(turns);
}

}  // namespace retrace
