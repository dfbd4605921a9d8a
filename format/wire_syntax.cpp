#include "format/wire_syntax.hpp"

#include <algorithm>
#include <cstdio>

namespace retrace {

namespace {

bool is_control(unsigned char c) { return c < 0x20 || c == 0x7f; }

bool is_tchar(unsigned char c) {
  if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
}

// The first byte of `text` that `allowed` refuses, as " 0x0d" ("" when there is none).
template <class Allowed>
std::string first_refused(std::string_view text, Allowed allowed) {
  auto at = std::find_if(text.begin(), text.end(), [&](char c) { return !allowed(static_cast<unsigned char>(c)); });
  if (at == text.end()) return {};
  char hex[8];
  std::snprintf(hex, sizeof hex, "0x%02x", static_cast<unsigned char>(*at));
  return std::string(hex) + " at byte " + std::to_string(at - text.begin());
}

// A header name for a message: cut to 64 bytes and its control bytes shown as '?', so that
// the message itself stays one line.
std::string shown(std::string_view name) {
  std::string text(name.substr(0, 64));
  for (auto& c : text)
    if (is_control(static_cast<unsigned char>(c))) c = '?';
  return text;
}

}  // namespace

bool is_token(std::string_view text) { return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) { return is_tchar(static_cast<unsigned char>(c)); }); }

bool is_wire_target(std::string_view target) {
  return std::none_of(target.begin(), target.end(),
                      [](char c) { return c == ' ' || is_control(static_cast<unsigned char>(c)); });
}

bool is_field_value(std::string_view value) {
  return std::none_of(value.begin(), value.end(), [](char c) {
    return c != '\t' && is_control(static_cast<unsigned char>(c));
  });
}

std::string wire_syntax_error(std::string_view method, std::string_view target,
                              const std::vector<HttpHeader>& headers) {
  if (!method.empty() && !is_token(method))
    return "the method is not an HTTP token (byte " + first_refused(method, is_tchar) + ")";
  if (!is_wire_target(target))
    return "the target has a space or control byte (" +
           first_refused(target, [](unsigned char c) { return c != ' ' && !is_control(c); }) + ")";
  for (std::size_t i = 0; i < headers.size(); ++i) {
    const auto& header = headers[i];
    auto which = "header " + std::to_string(i + 1) + " (" + shown(header.name) + ")";
    if (!is_token(header.name))
      return which + ": its name is not an HTTP token" +
             (header.name.empty() ? std::string(" (it is empty)") : " (byte " + first_refused(header.name, is_tchar) + ")");
    if (!is_field_value(header.value))
      return which + ": its value has a control byte (" +
             first_refused(header.value, [](unsigned char c) { return c == '\t' || !is_control(c); }) + ")";
  }
  return {};
}

}  // namespace retrace
