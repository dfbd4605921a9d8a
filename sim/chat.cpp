// Chat messages as the simulator reads and renders them, and the known-answer book (see engine.hpp).
#include "sim/engine.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include <boost/json.hpp>

namespace retrace::sim {

std::string render_chat(const std::vector<ChatMessage>& messages) {
  std::string prompt;
  for (const ChatMessage& message : messages) {
    prompt += "<|";
    prompt += message.role;
    prompt += "|>\n";
    prompt += message.content;
    prompt += "\n";
  }
  prompt += "<|assistant|>\n";
  return prompt;
}

namespace {
namespace json = boost::json;

std::string_view string_in(const json::object& object, std::string_view key) {
  const json::value* value = object.if_contains(key);
  return value && value->is_string() ? std::string_view(value->get_string()) : std::string_view();
}

// Tool turns pair as OpenAI's API requires: each "tool" message answers, by its "tool_call_id", a
// call of the assistant message before it, and every call is answered before the conversation
// goes on. (A client that re-sends a conversation with its ids out of step is refused, as there.)
// Returns false with `error_param` and `error_message` set on the first pair that does not hold.
bool tool_turns_pair(const json::array& list, std::string& error_param, std::string& error_message) {
  std::vector<std::string_view> open;  // ids of the last tool turn's calls not yet answered
  std::size_t turn = 0;                // where that tool turn is
  for (std::size_t i = 0; i <= list.size(); ++i) {  // list.size(): the end, where every call is answered
    const json::object* message = i < list.size() ? list[i].if_object() : nullptr;
    const std::string_view role = message ? string_in(*message, "role") : std::string_view();
    if (role == "tool") {
      const std::string where = "messages[" + std::to_string(i) + "]";
      const std::string_view id = string_in(*message, "tool_call_id");
      auto answered = std::find(open.begin(), open.end(), id);
      if (id.empty() || answered == open.end()) {
        error_param = where + ".tool_call_id";
        error_message = "'" + where + ".tool_call_id' ('" + std::string(id) +
                        "') answers no call of the assistant message before it: messages with role 'tool' "
                        "must be a response to a preceding message's 'tool_calls'";
        return false;
      }
      open.erase(answered);
      continue;
    }
    if (!open.empty()) {
      error_param = "messages[" + std::to_string(turn) + "].tool_calls";
      error_message = "an assistant message with 'tool_calls' must be followed by tool messages answering each "
                      "'tool_call_id'; not answered: '" + std::string(open.front()) + "'";
      return false;
    }
    const json::value* calls = message && role == "assistant" ? message->if_contains("tool_calls") : nullptr;
    if (!calls || !calls->is_array()) continue;
    turn = i;
    for (const json::value& call : calls->get_array())
      if (const json::object* object = call.if_object()) open.push_back(string_in(*object, "id"));
  }
  return true;
}
}  // namespace

std::optional<std::vector<ChatMessage>> parse_chat_messages(const boost::json::value& messages,
                                                            std::string& error_param,
                                                            std::string& error_message) {
  namespace json = boost::json;
  error_param = "messages";
  if (!messages.is_array()) {
    error_message = "'messages' must be an array of {\"role\", \"content\"} objects";
    return std::nullopt;
  }
  const json::array& list = messages.get_array();
  if (list.empty()) {
    error_message = "'messages' must not be empty";
    return std::nullopt;
  }
  std::vector<ChatMessage> parsed;
  for (std::size_t i = 0; i < list.size(); ++i) {
    std::string where = "messages[" + std::to_string(i) + "]";
    const json::object* message = list[i].if_object();
    if (!message) {
      error_param = where;
      error_message = "'" + where + "' must be an object with 'role' and 'content'";
      return std::nullopt;
    }
    const json::value* role = message->if_contains("role");
    if (!role || !role->is_string()) {
      error_param = where + ".role";
      error_message = "'" + where + ".role' must be a string such as \"user\"";
      return std::nullopt;
    }
    ChatMessage out{std::string(role->get_string()), {}};
    const json::value* content = message->if_contains("content");
    if (content && content->is_string()) {
      out.content = std::string(content->get_string());
    } else if (content && content->is_array()) {
      for (const json::value& part : content->get_array()) {
        const json::object* object = part.if_object();
        const json::value* type = object ? object->if_contains("type") : nullptr;
        if (type && type->is_string() && type->get_string() != "text") {
          // An image_url (input_audio, ...) part: nothing the toy model reads, but its bytes are
          // prompt, as a vision model's prompt grows with its images.
          out.content += json::serialize(*object);
          continue;
        }
        const json::value* text = object ? object->if_contains("text") : nullptr;
        if (!text || !text->is_string()) {
          error_param = where + ".content";
          error_message = "'" + where + ".content' parts must be {\"type\": \"text\", \"text\": ...} or media "
                          "parts such as {\"type\": \"image_url\", ...}";
          return std::nullopt;
        }
        out.content += text->get_string();
      }
    } else if (content && !content->is_null()) {
      error_param = where + ".content";
      error_message = "'" + where + ".content' must be a string or a list of text parts";
      return std::nullopt;
    } else if (!content && out.role != "assistant") {
      error_param = where + ".content";
      error_message = "'" + where + ".content' is missing";
      return std::nullopt;
    }
    parsed.push_back(std::move(out));
  }
  if (!tool_turns_pair(list, error_param, error_message)) return std::nullopt;
  return parsed;
}

namespace {
std::string messages_key(const std::vector<ChatMessage>& messages) {
  std::string key = "M";
  for (const ChatMessage& message : messages) {
    key += message.role;
    key += '\x1f';
    key += message.content;
    key += '\x1e';
  }
  return key;
}
}  // namespace

void AnswerBook::add_prompt(std::string prompt, std::string answer) {
  answers_.insert_or_assign("P" + prompt, std::move(answer));
}

void AnswerBook::add_messages(const std::vector<ChatMessage>& messages, std::string answer) {
  answers_.insert_or_assign(messages_key(messages), std::move(answer));
}

const std::string* AnswerBook::find_prompt(std::string_view prompt) const {
  auto it = answers_.find("P" + std::string(prompt));
  return it == answers_.end() ? nullptr : &it->second;
}

const std::string* AnswerBook::find_messages(const std::vector<ChatMessage>& messages) const {
  auto it = answers_.find(messages_key(messages));
  return it == answers_.end() ? nullptr : &it->second;
}

AnswerBook AnswerBook::load(const std::string& path) {
  namespace json = boost::json;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open answers file " + path + ": " + std::strerror(errno));
  AnswerBook book;
  std::string line;
  for (std::size_t number = 1; std::getline(in, line); ++number) {
    auto where = [&] { return "answers file " + path + " line " + std::to_string(number) + ": "; };
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    boost::system::error_code ec;
    json::value entry = json::parse(line, ec);
    if (ec) throw std::runtime_error(where() + "not JSON (" + ec.message() + ")");
    const json::object* object = entry.if_object();
    const json::value* answer = object ? object->if_contains("answer") : nullptr;
    if (!answer || !answer->is_string())
      throw std::runtime_error(where() + "needs a string \"answer\"; expected {\"prompt\": \"...\", \"answer\": \"...\"} or {\"messages\": [...], \"answer\": \"...\"}");
    if (const json::value* prompt = object->if_contains("prompt"); prompt && prompt->is_string()) {
      book.add_prompt(std::string(prompt->get_string()), std::string(answer->get_string()));
    } else if (const json::value* messages = object->if_contains("messages")) {
      std::string param, message;
      auto parsed = parse_chat_messages(*messages, param, message);
      if (!parsed) throw std::runtime_error(where() + message);
      book.add_messages(*parsed, std::string(answer->get_string()));
    } else {
      throw std::runtime_error(where() + "needs a string \"prompt\" or a \"messages\" array");
    }
  }
  return book;
}

}  // namespace retrace::sim
