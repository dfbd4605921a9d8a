// The secret policy (format/redaction.hpp) on arbitrary JSON bodies, against itself: a body
// redact_json_body() leaves unchanged holds, after JSON decoding, no scalar under a secret name
// and no secret-shaped string at any depth (the cheap look at the text that skips most bodies
// must never skip one that names a secret, whatever escapes spell it); a body it changes is JSON
// that holds none either; that includes JSON inside strings (tool arguments and results, to the
// policy's depth of four strings), the secret query parameters of URLs in any string, and the one
// member kept under a secret name (a thinking block's signature). The same for a form-encoded body,
// and a Request typed as a form whose body is JSON is redacted as JSON.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include <boost/json.hpp>

#include "format/redaction.hpp"

namespace json = boost::json;

namespace {

// A secret left where the policy says there must be none. `depth`: how many strings of JSON
// this value sits inside (the policy parses four deep).
bool holds_secret(const json::value& value, int depth = 0) {
  if (const auto* object = value.if_object()) {
    const auto* type = object->if_contains("type");
    std::string_view type_name = type && type->is_string() ? std::string_view(type->get_string()) : "";
    for (const auto& member : *object) {
      const auto& inner = member.value();
      bool scalar = !inner.is_object() && !inner.is_array() && !inner.is_null();
      if (scalar && retrace::is_secret_body_field(member.key()) &&
          !(inner.is_string() && (inner.get_string() == retrace::kRedacted ||
                                  retrace::is_integrity_token(type_name, member.key()))))
        return true;
      if (holds_secret(inner, depth)) return true;
    }
  } else if (const auto* array = value.if_array()) {
    for (const auto& element : *array)
      if (holds_secret(element, depth)) return true;
  } else if (const auto* text = value.if_string()) {
    // In the policy's order: a secret shape, else JSON inside (to its depth), else URLs.
    if (retrace::is_secret_value(*text)) return true;
    auto first = text->find_first_not_of(" \t\n\r");
    if (depth < 4 && first != json::string::npos && ((*text)[first] == '{' || (*text)[first] == '[')) {
      json::error_code error;
      auto inner = json::parse(*text, error);
      if (!error) return holds_secret(inner, depth + 1);
    }
    return retrace::redact_urls(*text) != *text;
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view body(reinterpret_cast<const char*>(data), size);
  auto redacted = retrace::redact_json_body(body);
  json::error_code error;
  auto parsed = json::parse(body, error);
  if (!error && parsed.is_object()) {
    if (redacted == body && holds_secret(parsed)) std::abort();  // the pre-check skipped a secret
    if (redacted != body) {
      auto again = json::parse(redacted, error);
      if (error || holds_secret(again)) std::abort();
      if (retrace::redact_json_body(redacted) != redacted) std::abort();  // one pass is enough
    }
  } else if (redacted != body) {
    std::abort();  // not a JSON object: left as it is
  }
  retrace::Request request;
  request.headers = {{"Content-Type", "application/x-www-form-urlencoded"}};
  request.body = std::string(body);
  retrace::Redactor().apply(request);
  if (!error && parsed.is_object() && request.body != redacted) std::abort();  // a JSON body is JSON
  auto form = retrace::redact_form(body);
  if (retrace::redact_form(form) != form) std::abort();
  return 0;
}
