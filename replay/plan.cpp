// Live sessions: a turn's earlier assistant messages replaced with this run's answers
// (replay/replay.hpp, substitute_session_answers).
#include <algorithm>
#include <boost/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/text.hpp"
#include "replay/replay.hpp"

namespace retrace::replay {
namespace json = boost::json;

namespace {

// An answer's token bytes as the text a server sends: a character cut short at the end (an answer
// stopped by max_tokens inside an emoji) is held back, as servers hold it back, and any other byte
// that is not UTF-8 becomes U+FFFD, as servers decode it; token bytes sent as they are would be
// invalid JSON text to the server (llama-server answers it with HTTP 500).
std::string server_text(std::string_view bytes) {
  bytes = bytes.substr(0, utf8_whole_prefix(bytes));
  if (is_valid_utf8(bytes)) return std::string(bytes);
  std::string text;
  for (std::size_t at = 0; at < bytes.size();) {
    std::size_t length = 1;
    while (length <= 4 && !is_valid_utf8(bytes.substr(at, length))) ++length;
    if (length > 4) {
      text += "\xEF\xBF\xBD";
      ++at;
    } else {
      text.append(bytes.substr(at, length));
      at += length;
    }
  }
  return text;
}

std::string_view string_at(const json::object& object, std::string_view key) {
  const auto* value = object.if_contains(key);
  return value && value->is_string() ? std::string_view(value->as_string()) : std::string_view();
}

bool is_role(const json::value& message, std::string_view role) {
  const auto* object = message.if_object();
  const auto* value = object ? object->if_contains("role") : nullptr;
  return value && value->is_string() && value->as_string() == role;
}

// The recorded message's calls ("tool_calls"), or nullptr when it has none.
const json::array* recorded_calls(const json::object& message) {
  const auto* calls = message.if_contains("tool_calls");
  return calls && calls->is_array() && !calls->as_array().empty() ? &calls->as_array() : nullptr;
}

// An Anthropic assistant turn with tool_use blocks: its ids pair with the tool_result blocks of
// the next user message, in a form this substitution does not rewrite.
bool has_tool_use_block(const json::object& message) {
  const auto* content = message.if_contains("content");
  if (!content || !content->is_array()) return false;
  for (const auto& block : content->as_array())
    if (block.is_object() && string_at(block.as_object(), "type") == "tool_use") return true;
  return false;
}

// Arguments are the same call's when they are equal as JSON (servers differ in spacing), or as
// bytes when either is not JSON.
bool same_arguments(std::string_view recorded, std::string_view now) {
  json::error_code ec_recorded, ec_now;
  auto a = json::parse(recorded, ec_recorded);
  auto b = json::parse(now, ec_now);
  if (ec_recorded || ec_now) return recorded == now;
  return a == b;
}

bool same_calls(const json::array& recorded, const std::vector<SessionCall>& now) {
  if (recorded.size() != now.size()) return false;
  for (std::size_t i = 0; i < now.size(); ++i) {
    const auto* call = recorded[i].if_object();
    const auto* function = call ? call->if_contains("function") : nullptr;
    if (!function || !function->is_object()) return false;
    if (string_at(function->as_object(), "name") != now[i].name) return false;
    if (!same_arguments(string_at(function->as_object(), "arguments"), server_text(now[i].arguments)))
      return false;
  }
  return true;
}

// The tool turn at messages[at] made this run's: its calls replaced, and the "tool" messages
// after it (up to the next assistant message) re-pointed from the recorded ids to this run's.
void substitute_calls(json::array& messages, std::size_t at, const SessionAnswer& answer) {
  auto& message = messages[at].as_object();
  const json::array recorded = *recorded_calls(message);
  json::array calls;
  for (std::size_t i = 0; i < answer.calls.size(); ++i) {
    const auto& call = answer.calls[i];
    const auto recorded_id = string_at(recorded[i].as_object(), "id");
    const std::string id = call.id.empty() ? std::string(recorded_id) : call.id;
    calls.push_back(json::object{{"id", id}, {"type", "function"},
                                 {"function", json::object{{"name", call.name},
                                                           {"arguments", server_text(call.arguments)}}}});
    for (std::size_t k = at + 1; k < messages.size() && !is_role(messages[k], "assistant"); ++k) {
      auto* tool = messages[k].if_object();
      if (!tool || !is_role(messages[k], "tool") || recorded_id.empty()) continue;
      if (string_at(*tool, "tool_call_id") == recorded_id) (*tool)["tool_call_id"] = id;
    }
  }
  message["tool_calls"] = std::move(calls);
  if (answer.content.empty()) message["content"] = nullptr;
  else message["content"] = json::string(server_text(answer.content));
}

// One recorded assistant message (messages[at]) and this run's answer to its turn.
ToolTurn substitute_one(json::array& messages, std::size_t at, const SessionAnswer& answer) {
  auto& message = messages[at].as_object();
  const json::array* calls = recorded_calls(message);
  if (has_tool_use_block(message)) return ToolTurn::kept;
  if (!calls && answer.calls.empty()) {
    message["content"] = json::string(server_text(answer.content));
    return ToolTurn::none;
  }
  if (!calls || !same_calls(*calls, answer.calls)) return ToolTurn::kept;
  substitute_calls(messages, at, answer);
  return ToolTurn::substituted;
}

}  // namespace

std::optional<SessionAnswer> session_answer(const std::vector<Choice>& choices,
                                            const std::vector<llm::ToolCallId>& ids) {
  const Choice* content = first_answer(choices);
  if (!content) return std::nullopt;
  SessionAnswer answer{llm::choice_text(*content), {}};
  for (const Choice& choice : choices) {
    if (choice.index != content->index || choice.part != Part::tool_call) continue;
    auto id = std::find_if(ids.begin(), ids.end(), [&](const llm::ToolCallId& known) {
      return known.index == choice.index && known.call == choice.tool_call;
    });
    answer.calls.push_back({id == ids.end() ? std::string() : id->id, choice.tool_name, llm::choice_text(choice)});
  }
  return answer;
}

SessionBody substitute_session_answers(std::string_view body,
                                       const std::vector<std::optional<SessionAnswer>>& answers) {
  SessionBody out{std::string(body), ToolTurn::none};
  if (answers.empty()) return out;
  json::error_code ec;
  json::value root = json::parse(body, ec);
  if (ec || !root.is_object()) return out;
  auto* messages = root.as_object().if_contains("messages");
  if (!messages || !messages->is_array()) return out;
  auto& list = messages->as_array();
  std::vector<std::size_t> assistant;  // positions in `list`
  for (std::size_t at = 0; at < list.size(); ++at)
    if (is_role(list[at], "assistant")) assistant.push_back(at);
  bool changed = false;
  std::size_t pairs = std::min(assistant.size(), answers.size());
  for (std::size_t j = 0; j < pairs; ++j) {
    const auto& answer = answers[answers.size() - 1 - j];
    if (!answer) continue;
    auto turn = substitute_one(list, assistant[assistant.size() - 1 - j], *answer);
    if (j == 0) out.newest = turn;
    changed = changed || turn != ToolTurn::kept;
  }
  if (changed) out.body = json::serialize(root);
  return out;
}

}  // namespace retrace::replay
