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

}  // namespace

std::string substitute_session_answers(std::string_view body,
                                       const std::vector<std::optional<std::string>>& answers) {
  if (answers.empty()) return std::string(body);
  json::error_code ec;
  json::value root = json::parse(body, ec);
  if (ec || !root.is_object()) return std::string(body);
  auto* messages = root.as_object().if_contains("messages");
  if (!messages || !messages->is_array()) return std::string(body);
  std::vector<json::object*> assistant;
  for (auto& message : messages->as_array()) {
    auto* object = message.if_object();
    if (!object) continue;
    auto* role = object->if_contains("role");
    if (role && role->is_string() && role->as_string() == "assistant") assistant.push_back(object);
  }
  bool changed = false;
  std::size_t pairs = std::min(assistant.size(), answers.size());
  for (std::size_t j = 0; j < pairs; ++j) {
    const auto& answer = answers[answers.size() - 1 - j];
    if (!answer) continue;
    (*assistant[assistant.size() - 1 - j])["content"] = json::string(server_text(*answer));
    changed = true;
  }
  return changed ? json::serialize(root) : std::string(body);
}

}  // namespace retrace::replay
