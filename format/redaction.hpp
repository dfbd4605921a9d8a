// What retrace treats as a secret, and the one marker it writes in a secret's place. Every stage
// asks here: record redacts what it captures, replay what it writes to its trace (and never
// resends a recorded secret), sweep what it keeps in plan.json.
//
// Secret are:
//   headers          by name (secret_header_names(): Authorization, Cookie, X-Api-Key, ...), or
//                    when the lower-cased name contains "auth", "token", "secret", "password",
//                    "session" or "cookie", or has "key" (or "apikey") as a '-'/'_'-separated
//                    word: X-Goog-Api-Key, Ocp-Apim-Subscription-Key (but not Keep-Alive);
//   query parameters by name, case-insensitive: api-key, key, access_token, token, sig, ...;
//   body fields      top-level members of a JSON object request body, by exact name: api_key,
//                    password, token, secret, ... Only the top level: deeper fields are prompt
//                    content and tool schemas (a "token" property), which must replay unchanged,
//                    and responses are never rewritten (logprobs carry "token" fields).
// A redacted value becomes kRedacted, whatever it was.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "format/trace.hpp"

namespace retrace {

inline constexpr std::string_view kRedacted = "[redacted]";

// True for kRedacted, and for the marker sweep plans held before there was one marker
// ("<redacted: pass --header again on --resume>"), so an old plan.json still resumes correctly.
bool is_redaction_marker(std::string_view value);

// The header names redacted by name (in their usual spelling), for settings and help text.
std::span<const std::string_view> secret_header_names();

bool is_secret_header(std::string_view name);     // by name or pattern, any case
bool is_secret_query_parameter(std::string_view name);
bool is_secret_body_field(std::string_view name);

// The target with every secret query parameter's value replaced by kRedacted; unchanged (byte
// for byte) when it holds none.
std::string redact_query(std::string_view target);

// The body with every secret top-level field's value replaced by kRedacted; unchanged (byte for
// byte) when it holds none or is not a JSON object.
std::string redact_json_body(std::string_view body);

// The policy above plus the user's own header names (record --redact-header), or nothing at all
// (record --keep-secrets).
class Redactor {
 public:
  explicit Redactor(bool keep_secrets = false, const std::vector<std::string>& extra_headers = {});

  bool redacts(std::string_view header_name) const;
  void apply(std::vector<HttpHeader>& headers) const;
  // Headers, query parameters and body fields.
  void apply(Request& request) const;

 private:
  bool keep_secrets_;
  std::vector<std::string> extra_;  // lower case
};

}  // namespace retrace
