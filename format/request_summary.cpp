// What a person wants to see of a request and of an answer (format/json.hpp).
#include "base/text.hpp"
#include "format/json.hpp"

namespace retrace {

namespace json = boost::json;

namespace {

std::string cut(std::string text, std::size_t max_chars) {
  if (text.size() <= max_chars) return text;
  text.resize(utf8_whole_prefix(std::string_view(text).substr(0, max_chars)));
  return text + "…";
}

// Chat content is a string or a list of parts; the text parts are what a person reads.
std::string content_text(const json::value& content) {
  if (content.is_string()) return std::string(content.get_string());
  std::string text;
  if (const auto* parts = content.if_array())
    for (const auto& part : *parts)
      if (const auto* object = part.if_object())
        if (const auto* part_text = object->if_contains("text"); part_text && part_text->is_string())
          text += part_text->get_string();
  return text;
}

}  // namespace

std::string request_summary(const Request& request, std::size_t max_chars) {
  boost::json::error_code error;
  json::value body = json::parse(request.body, error);
  if (!error && body.is_object()) {
    const auto& object = body.get_object();
    if (const auto* messages = object.if_contains("messages"); messages && messages->is_array()) {
      const auto& list = messages->get_array();
      for (auto it = list.rbegin(); it != list.rend(); ++it) {
        const auto* message = it->if_object();
        if (!message) continue;
        const auto* role = message->if_contains("role");
        const auto* content = message->if_contains("content");
        if (role && role->is_string() && role->get_string() == "user" && content)
          return cut(content_text(*content), max_chars);
      }
    }
    if (const auto* prompt = object.if_contains("prompt")) {
      if (prompt->is_string()) return cut(std::string(prompt->get_string()), max_chars);
      if (prompt->is_array() && !prompt->get_array().empty() && prompt->get_array()[0].is_string())
        return cut(std::string(prompt->get_array()[0].get_string()), max_chars);
    }
  }
  std::string raw = is_valid_utf8(request.body) ? request.body
                                                : "<" + std::to_string(request.body.size()) +
                                                      " bytes of binary data>";
  return cut(std::move(raw), max_chars);
}

std::string output_text(const Choice& choice) {
  std::string text;
  for (const auto& token : choice.tokens) text += token.bytes;
  return text;
}

}  // namespace retrace
