// The secret policy of redaction.hpp: which names, and how a value is replaced.
#include "format/redaction.hpp"

#include <algorithm>
#include <array>
#include <boost/json.hpp>

#include "base/ascii.hpp"

namespace retrace {

namespace {

constexpr std::array<std::string_view, 13> kSecretHeaderNames = {
    "Authorization", "Proxy-Authorization", "Cookie",        "Set-Cookie",
    "X-Api-Key",     "Api-Key",             "X-Goog-Api-Key", "X-Auth-Token",
    "Ocp-Apim-Subscription-Key", "X-Amz-Security-Token", "WWW-Authenticate",
    "OpenAI-Organization", "OpenAI-Project"};

// Substrings of a lower-cased header name that make it secret.
constexpr std::array<std::string_view, 8> kSecretHeaderParts = {
    "auth", "token", "secret", "password", "session", "cookie", "signature", "credential"};

// Query parameter and body field names are compared squashed (lower case, without '-', '_', '.'
// and spaces: "API_KEY", "apiKey" and "api-key" are one name) and, for a query, after
// percent-decoding ("api%5Fkey"). A name is secret when it is one of these...
constexpr std::array<std::string_view, 21> kSecretQueryNames = {
    "apikey", "key",  "accesstoken", "token", "idtoken", "refreshtoken", "auth",
    "authtoken", "secret", "clientsecret", "password", "sig", "signature", "jwt",
    "code",  // Azure Functions' function key
    "xamzsecuritytoken", "xamzsignature", "xamzcredential", "xgoogapikey", "subscriptionkey",
    "sessiontoken"};
// ...for a body field (JSON names: "key" and "code" are ordinary words there)...
constexpr std::array<std::string_view, 3> kSecretBodyNames = {"token", "auth", "sig"};
// ...or, for both, when it contains one of these words or ends with one of the next.
constexpr std::array<std::string_view, 6> kSecretNameParts = {"password", "passwd", "secret",
                                                               "apikey", "credential", "privatekey"};
constexpr std::array<std::string_view, 3> kSecretNameEnds = {"token", "jwt", "signature"};

constexpr std::string_view kLegacySweepMarker = "<redacted: pass --header again on --resume>";

std::string squash(std::string_view name) {
  std::string out;
  out.reserve(name.size());
  for (char c : name)
    if (c != '-' && c != '_' && c != '.' && c != ' ') out += ascii_lower(c);
  return out;
}

template <std::size_t N>
bool contains(const std::array<std::string_view, N>& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

bool secret_by_word(std::string_view squashed) {
  return std::any_of(kSecretNameParts.begin(), kSecretNameParts.end(),
                     [&](auto part) { return squashed.find(part) != std::string_view::npos; }) ||
         std::any_of(kSecretNameEnds.begin(), kSecretNameEnds.end(),
                     [&](auto end) { return squashed.ends_with(end); });
}

// "key" or "apikey" as one of the '-'/'_'-separated words of a lower-cased name.
bool has_key_word(std::string_view name) {
  while (!name.empty()) {
    auto end = name.find_first_of("-_");
    auto word = name.substr(0, end);
    if (word == "key" || word == "apikey") return true;
    if (end == std::string_view::npos) break;
    name.remove_prefix(end + 1);
  }
  return false;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  c = ascii_lower(c);
  return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

// %XX decoded and '+' as a space (application/x-www-form-urlencoded); a bad escape stays as it is.
std::string percent_decode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() && hex_value(text[i + 1]) >= 0 &&
        hex_value(text[i + 2]) >= 0) {
      out += static_cast<char>(hex_value(text[i + 1]) * 16 + hex_value(text[i + 2]));
      i += 2;
    } else {
      out += text[i] == '+' ? ' ' : text[i];
    }
  }
  return out;
}

// "http://" or "https://" ends at `at` (where "://" starts) in `text`.
bool url_scheme_at(std::string_view text, std::size_t at) {
  return text.substr(at).starts_with("://") && at >= 4 &&
         (text.substr(at - 4, 4) == "http" || (at >= 5 && text.substr(at - 5, 5) == "https"));
}

bool all_of_set(std::string_view text, std::string_view set) {
  return !text.empty() && text.find_first_not_of(set) == std::string_view::npos;
}

constexpr std::string_view kBase64Url = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
constexpr std::string_view kAlnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
constexpr std::string_view kUpperDigits = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

// A JWT (RFC 7519): base64url header "eyJ..." (it encodes '{"'), payload and signature, joined by
// dots; the signature may be empty (alg "none").
bool is_jwt(std::string_view value) {
  if (!value.starts_with("eyJ")) return false;
  auto first = value.find('.');
  auto second = first == std::string_view::npos ? first : value.find('.', first + 1);
  if (second == std::string_view::npos) return false;
  auto signature = value.substr(second + 1);
  return all_of_set(value.substr(0, first), kBase64Url) &&
         all_of_set(value.substr(first + 1, second - first - 1), kBase64Url) &&
         (signature.empty() || all_of_set(signature, kBase64Url));
}

// Key formats that say what they are by their prefix: a value that is one of these is a secret
// wherever it stands.
struct KeyShape {
  std::string_view prefix;
  std::size_t min_rest;  // characters after the prefix, at least
  std::string_view alphabet;
};
constexpr std::array<KeyShape, 14> kKeyShapes = {{
    {"sk-", 20, kBase64Url},           // OpenAI (sk-proj-...), Anthropic (sk-ant-...), and others
    {"sk_live_", 16, kAlnum},          // Stripe
    {"rk_live_", 16, kAlnum},
    {"AKIA", 16, kUpperDigits},        // AWS access key ids
    {"ASIA", 16, kUpperDigits},
    {"AIza", 35, kBase64Url},          // Google API keys
    {"ghp_", 30, kAlnum},              // GitHub tokens
    {"gho_", 30, kAlnum},
    {"ghu_", 30, kAlnum},
    {"ghs_", 30, kAlnum},
    {"ghr_", 30, kAlnum},
    {"github_pat_", 30, kBase64Url},
    {"hf_", 30, kAlnum},               // Hugging Face
    {"xox", 12, kBase64Url},           // Slack (xoxb-, xoxp-, ...)
}};

}  // namespace

bool is_secret_value(std::string_view value) {
  for (std::string_view scheme : {"Bearer ", "bearer ", "Basic ", "token "})
    if (value.starts_with(scheme)) value.remove_prefix(scheme.size());
  if (is_jwt(value)) return true;
  if (value.find("-----BEGIN") != std::string_view::npos && value.find("PRIVATE KEY") != std::string_view::npos)
    return true;
  return std::any_of(kKeyShapes.begin(), kKeyShapes.end(), [&](const KeyShape& shape) {
    if (!value.starts_with(shape.prefix)) return false;
    auto rest = value.substr(shape.prefix.size());
    return rest.size() >= shape.min_rest && all_of_set(rest, shape.alphabet);
  });
}

bool is_redaction_marker(std::string_view value) {
  return value == kRedacted || value == kLegacySweepMarker;
}

std::span<const std::string_view> secret_header_names() { return kSecretHeaderNames; }

bool is_secret_header(std::string_view name) {
  auto folded = ascii_lower(name);
  for (auto known : kSecretHeaderNames)  // no lower-cased copy of each known name per call
    if (std::equal(folded.begin(), folded.end(), known.begin(), known.end(),
                   [](char a, char b) { return a == ascii_lower(b); }))
      return true;
  // CORS's flag names the word and holds none.
  if (folded == "access-control-allow-credentials") return false;
  for (auto part : kSecretHeaderParts)
    if (folded.find(part) != std::string::npos) return true;
  return has_key_word(folded) || squash(folded).find("apikey") != std::string::npos;
}

bool is_secret_query_parameter(std::string_view name) {
  auto squashed = squash(percent_decode(name));
  return contains(kSecretQueryNames, squashed) || secret_by_word(squashed);
}

bool is_secret_body_field(std::string_view name) {
  auto squashed = squash(name);
  return contains(kSecretBodyNames, squashed) || secret_by_word(squashed);
}

std::string redact_form(std::string_view pairs) {
  std::string out;
  out.reserve(pairs.size());
  bool first = true;
  while (true) {
    auto amp = pairs.find('&');
    auto pair = pairs.substr(0, amp);
    if (!first) out += '&';
    first = false;
    auto equals = pair.find('=');
    if (equals != std::string_view::npos &&
        (is_secret_query_parameter(pair.substr(0, equals)) ||
         is_secret_value(percent_decode(pair.substr(equals + 1))))) {
      out += pair.substr(0, equals + 1);
      out += kRedacted;
    } else {
      out += pair;
    }
    if (amp == std::string_view::npos) break;
    pairs.remove_prefix(amp + 1);
  }
  return out;
}

std::string redact_query(std::string_view target) {
  auto question = target.find('?');
  if (question == std::string_view::npos) return std::string(target);
  auto fragment = target.find('#', question);
  std::string out(target.substr(0, question + 1));
  out += redact_form(target.substr(question + 1, fragment == std::string_view::npos ? fragment : fragment - question - 1));
  if (fragment != std::string_view::npos) out += target.substr(fragment);
  return out;
}

bool is_integrity_token(std::string_view object_type, std::string_view field) {
  return object_type == "thinking" && field == "signature";
}

std::string redact_urls(std::string_view text) {
  std::string out;
  std::size_t copied = 0, at = 0;
  while ((at = text.find("://", at)) != std::string_view::npos) {
    if (!url_scheme_at(text, at)) {
      at += 3;
      continue;
    }
    const auto start = at - (text[at - 1] == 's' ? 5 : 4);
    const auto end = std::min(text.size(), text.find_first_of(" \t\r\n\"'<>`", at));
    const auto url = text.substr(start, end - start);
    if (url.find('?') != std::string_view::npos) {
      auto redacted = redact_query(url);
      if (redacted != url) {
        out.append(text.substr(copied, start - copied)).append(redacted);
        copied = end;
      }
    }
    at = end;
  }
  if (copied == 0) return std::string(text);
  out.append(text.substr(copied));
  return out;
}

bool is_json_object(std::string_view body) {
  const auto first = body.find_first_not_of(" \t\n\r");
  if (first == std::string_view::npos || body[first] != '{') return false;
  boost::json::error_code error;
  boost::json::stream_parser parser;
  parser.write(body, error);
  if (!error) parser.finish(error);
  return !error;
}

namespace {

// JSON inside a string (a tool call's arguments, a tool's result) is parsed and redacted when it
// is at most this large and this many strings deep (a string of JSON holding a string of JSON...):
// the work is at most kMaxEmbeddedDepth passes over the body.
constexpr std::size_t kMaxEmbeddedBytes = 8u << 20;
constexpr int kMaxEmbeddedDepth = 4;

// Could `body` name a secret field or hold a secret-shaped value? A look at the text that decides
// without parsing, so that most bodies are not parsed (this runs on every recorded request, whose
// prompt may be hundreds of kilobytes). It must say yes to every body redact_json_body() would
// change. Without a backslash there are no escapes, so the quotes of a JSON text alternate: each
// string runs from one '"' to the next, and is a member's name when a ':' follows it (after
// whitespace), else a value. Those are exactly what redact_value() looks at, with the same
// predicates; anything with a backslash (an escape may spell any name, and JSON inside a string
// has its quotes escaped) is parsed. Two memchr-speed passes instead of ~35 over the text and a
// lower-cased copy (bench/RESULTS.md, "redaction").
bool may_hold_secret(std::string_view body) {
  if (body.find('\\') != std::string_view::npos) return true;
  std::size_t at = 0;
  while (true) {
    const auto open = body.find('"', at);
    if (open == std::string_view::npos) return false;
    const auto close = body.find('"', open + 1);
    if (close == std::string_view::npos) return true;  // not JSON: the parse decides
    const auto text = body.substr(open + 1, close - open - 1);
    const auto next = body.find_first_not_of(" \t\n\r", close + 1);
    const bool name = next != std::string_view::npos && body[next] == ':';
    if (name ? is_secret_body_field(text)
             : is_secret_value(text) || (text.find("://") != std::string_view::npos &&
                                         text.find('?') != std::string_view::npos))
      return true;
    at = close + 1;
  }
}

bool redact_value(boost::json::value& value, int depth);

// A string value's new text, nullopt when it keeps its own: kRedacted for a secret shape; a JSON
// object or array inside it redacted as a body is (within the bounds above); the secret query
// parameters of the URLs in it.
std::optional<std::string> redacted_string(std::string_view text, int depth) {
  if (is_secret_value(text)) return std::string(kRedacted);
  const auto first = text.find_first_not_of(" \t\n\r");
  if (first != std::string_view::npos && (text[first] == '{' || text[first] == '[') &&
      depth < kMaxEmbeddedDepth && text.size() <= kMaxEmbeddedBytes && may_hold_secret(text)) {
    boost::json::error_code error;
    auto inner = boost::json::parse(text, error);
    if (!error) {
      if (!redact_value(inner, depth + 1)) return std::nullopt;
      return boost::json::serialize(inner);
    }
  }
  auto urls = redact_urls(text);
  if (urls != text) return urls;
  return std::nullopt;
}

// Every scalar under a secret name, and every secret-shaped string, at any depth. A container
// under a secret name is walked, not replaced: a tool's JSON schema may well describe a "token"
// property ({"token": {"type": "string"}}), which must replay unchanged. An integrity token the
// server itself issued (is_integrity_token) stays, unless its value has a credential's shape.
bool redact_value(boost::json::value& value, int depth) {
  bool changed = false;
  if (auto* object = value.if_object()) {
    // A copy: the loop below may rewrite the "type" member itself.
    const auto* type = object->if_contains("type");
    const std::string type_name = type && type->is_string() ? std::string(type->get_string()) : std::string();
    for (auto& member : *object) {
      auto& inner = member.value();
      bool scalar = !inner.is_object() && !inner.is_array() && !inner.is_null();
      if (scalar && is_secret_body_field(member.key()) &&
          !(inner.is_string() && is_integrity_token(type_name, member.key()))) {
        if (!(inner.is_string() && inner.get_string() == kRedacted)) {
          inner = boost::json::string(kRedacted);
          changed = true;
        }
        continue;
      }
      changed |= redact_value(inner, depth);
    }
  } else if (auto* array = value.if_array()) {
    for (auto& element : *array) changed |= redact_value(element, depth);
  } else if (auto* text = value.if_string()) {
    if (auto redacted = redacted_string(*text, depth)) {
      *text = *redacted;
      changed = true;
    }
  }
  return changed;
}

}  // namespace

std::optional<std::string> redacted_json_body(std::string_view body) {
  if (!may_hold_secret(body)) return std::nullopt;
  boost::json::error_code error;
  auto parsed = boost::json::parse(body, error);
  if (error || !parsed.is_object() || !redact_value(parsed, 0)) return std::nullopt;
  return boost::json::serialize(parsed);
}

std::string redact_json_body(std::string_view body) {
  auto redacted = redacted_json_body(body);
  return redacted ? std::move(*redacted) : std::string(body);
}

Redactor::Redactor(bool keep_secrets, const std::vector<std::string>& extra_headers)
    : keep_secrets_(keep_secrets) {
  for (const auto& name : extra_headers) extra_.push_back(ascii_lower(name));
}

bool Redactor::redacts(std::string_view header_name) const {
  if (keep_secrets_) return false;
  return is_secret_header(header_name) ||
         std::find(extra_.begin(), extra_.end(), ascii_lower(header_name)) != extra_.end();
}

void Redactor::apply(std::vector<HttpHeader>& headers) const {
  if (keep_secrets_) return;
  for (auto& header : headers) {
    if (redacts(header.name) || is_secret_value(header.value)) {
      header.value = kRedacted;
    } else if (header.value.find('?') != std::string::npos &&
               (header.value.starts_with("/") || header.value.starts_with("http://") ||
                header.value.starts_with("https://"))) {
      header.value = redact_query(header.value);  // a URL (Referer, Location, X-Original-URL)
    }
  }
}

void Redactor::apply(Request& request) const {
  if (keep_secrets_) return;
  bool form = false;
  for (const auto& header : request.headers)
    if (ascii_lower(header.name) == "content-type" &&
        ascii_lower(header.value).starts_with("application/x-www-form-urlencoded"))
      form = true;
  apply(request.headers);
  request.target = redact_query(request.target);
  // A JSON body sent as a form (curl -d's default type) is parsed as JSON by the servers that
  // matter, so it is redacted as JSON; only a body that is not a JSON object is a form.
  if (form && !is_json_object(request.body)) {
    request.body = redact_form(request.body);
  } else if (auto redacted = redacted_json_body(request.body)) {  // no copy of an unchanged body
    request.body = std::move(*redacted);
  }
}

}  // namespace retrace
