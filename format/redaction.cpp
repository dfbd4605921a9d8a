// The secret policy of redaction.hpp: which names, and how a value is replaced.
#include "format/redaction.hpp"

#include <algorithm>
#include <array>
#include <boost/json.hpp>

#include "format/ascii.hpp"

namespace retrace {

namespace {

constexpr std::array<std::string_view, 11> kSecretHeaderNames = {
    "Authorization", "Proxy-Authorization", "Cookie",        "Set-Cookie",
    "X-Api-Key",     "Api-Key",             "X-Goog-Api-Key", "X-Auth-Token",
    "Ocp-Apim-Subscription-Key", "X-Amz-Security-Token", "WWW-Authenticate"};

// Substrings of a lower-cased header name that make it secret.
constexpr std::array<std::string_view, 6> kSecretHeaderParts = {"auth",     "token",   "secret",
                                                                 "password", "session", "cookie"};

// Lower case; compared case-insensitively.
constexpr std::array<std::string_view, 17> kSecretQueryParameters = {
    "api-key",     "api_key",       "apikey",        "key",          "access_token",
    "token",       "id_token",      "refresh_token", "auth",         "auth_token",
    "secret",      "client_secret", "password",      "sig",          "signature",
    "x-amz-security-token", "x-amz-signature"};

// Exact (JSON names are case-sensitive).
constexpr std::array<std::string_view, 9> kSecretBodyFields = {
    "api_key", "apikey", "api-key", "access_token", "auth_token",
    "token",   "secret", "client_secret", "password"};

constexpr std::string_view kLegacySweepMarker = "<redacted: pass --header again on --resume>";

template <std::size_t N>
bool contains(const std::array<std::string_view, N>& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
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

}  // namespace

bool is_redaction_marker(std::string_view value) {
  return value == kRedacted || value == kLegacySweepMarker;
}

std::span<const std::string_view> secret_header_names() { return kSecretHeaderNames; }

bool is_secret_header(std::string_view name) {
  auto folded = ascii_lower(name);
  for (auto known : kSecretHeaderNames)
    if (ascii_iequals(folded, known)) return true;
  for (auto part : kSecretHeaderParts)
    if (folded.find(part) != std::string::npos) return true;
  return has_key_word(folded);
}

bool is_secret_query_parameter(std::string_view name) {
  return contains(kSecretQueryParameters, ascii_lower(name));
}

bool is_secret_body_field(std::string_view name) { return contains(kSecretBodyFields, name); }

std::string redact_query(std::string_view target) {
  auto question = target.find('?');
  if (question == std::string_view::npos) return std::string(target);
  std::string out(target.substr(0, question + 1));
  std::string_view query = target.substr(question + 1);
  bool first = true;
  while (true) {
    auto amp = query.find('&');
    auto pair = query.substr(0, amp);
    if (!first) out += '&';
    first = false;
    auto equals = pair.find('=');
    if (equals != std::string_view::npos && is_secret_query_parameter(pair.substr(0, equals))) {
      out += pair.substr(0, equals + 1);
      out += kRedacted;
    } else {
      out += pair;
    }
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return out;
}

std::string redact_json_body(std::string_view body) {
  // Most bodies name no secret field: skip the parse (this runs on every recorded request).
  bool named = std::any_of(kSecretBodyFields.begin(), kSecretBodyFields.end(), [&](auto field) {
    return body.find(std::string("\"") + std::string(field) + "\"") != std::string_view::npos;
  });
  if (!named) return std::string(body);
  boost::json::error_code error;
  auto parsed = boost::json::parse(body, error);
  if (error || !parsed.is_object()) return std::string(body);
  bool redacted = false;
  for (auto& member : parsed.as_object()) {
    if (!is_secret_body_field(member.key())) continue;
    member.value() = boost::json::string(kRedacted);
    redacted = true;
  }
  return redacted ? boost::json::serialize(parsed) : std::string(body);
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
  for (auto& header : headers)
    if (redacts(header.name)) header.value = kRedacted;
}

void Redactor::apply(Request& request) const {
  if (keep_secrets_) return;
  apply(request.headers);
  request.target = redact_query(request.target);
  request.body = redact_json_body(request.body);
}

}  // namespace retrace
