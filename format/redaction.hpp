// What retrace treats as a secret, and the one marker it writes in a secret's place. Every stage
// asks here: record redacts what it captures, replay what it writes to its trace (and never
// resends a recorded secret), sweep what it keeps in plan.json.
//
// Secret are:
//   headers          by name (secret_header_names(): Authorization, Cookie, X-Api-Key,
//                    OpenAI-Organization, ...), or when the lower-cased name contains "auth",
//                    "token", "secret", "password", "session", "cookie", "signature",
//                    "credential" or "apikey", or has "key" as a '-'/'_'-separated word:
//                    X-Goog-Api-Key, XApiKey, X-Signature (but not Keep-Alive); a header whose
//                    value is a URL (Referer, Location, X-Original-URL) has its query redacted
//                    as a target's;
//   query parameters by name, squashed (lower case, without '-', '_', '.', spaces) after
//                    percent-decoding, so api-key, API_KEY, apiKey and api%5Fkey are one name:
//                    key, token, sig, code (Azure Functions), jwt, X-Amz-Credential,
//                    subscription-key, ... (kSecretQueryNames), or a name that contains
//                    password, secret, apikey, credential, privatekey or ends with token, jwt,
//                    signature; the same for the fields of a form-encoded body;
//   body fields      members of a JSON request body at any depth, by their name after JSON
//                    decoding ("api\u005fkey" is api_key), squashed: token, auth, sig, and the
//                    words above (access_token, id_token, refresh_token, user_jwt, private_key,
//                    aws_secret_access_key, password, ...). Only a scalar is replaced: an object
//                    under such a name is walked, since a tool's JSON schema describing a
//                    "token" property must replay unchanged. Responses are never rewritten
//                    (logprobs carry "token" fields);
//                    A string that holds a JSON object or array (a tool call's "arguments", a
//                    tool's result) is parsed and redacted the same way inside, up to 4 strings
//                    deep and 8 MiB, and written back serialised. The "signature" of an Anthropic
//                    "thinking" block is the server's integrity token, not a credential: it stays
//                    (is_integrity_token), unless its value has a credential's shape. A form-encoded
//                    request whose body is a JSON object is redacted as JSON (servers parse it so);
//   URLs             the secret query parameters of every http(s) URL in a header value or a
//                    body string, whole or inside text (a presigned X-Amz-Signature, sig, token,
//                    key), as a request target's;
//   values           wherever they stand (a header, a query parameter, a JSON string at any
//                    depth), a whole value that is a JWT or a key whose format names it
//                    (is_secret_value(): sk-..., AKIA..., AIza..., ghp_..., hf_..., xox...,
//                    a PEM private key), with or without "Bearer ".
// A redacted value becomes kRedacted, whatever it was.
#pragma once

#include <optional>
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
bool is_secret_query_parameter(std::string_view name);  // as it stands in a URL (percent-encoded)
bool is_secret_body_field(std::string_view name);  // a JSON member's name, decoded
bool is_secret_value(std::string_view value);      // a JWT or a self-describing key

// The target with every secret query parameter's value replaced by kRedacted; unchanged (byte
// for byte) when it holds none.
std::string redact_query(std::string_view target);
// The same for a form-encoded body ("a=1&api_key=2").
std::string redact_form(std::string_view pairs);

// `text` with the secret query parameters of each http(s) URL in it redacted (redact_query); a
// URL runs to whitespace, a quote or '<', '>'. Unchanged when there are none.
std::string redact_urls(std::string_view text);

// True when the body is a JSON object (what a form-typed body is redacted as when it is one).
bool is_json_object(std::string_view body);

// A member under a secret name that is kept: the server's own integrity token in an object of
// this "type" (an Anthropic thinking block's "signature"), which a replay must send back intact.
bool is_integrity_token(std::string_view object_type, std::string_view field);

// The body with every secret field's value replaced by kRedacted; unchanged (byte for byte) when
// it holds none or is not a JSON object.
std::string redact_json_body(std::string_view body);
// The same, nullopt when the body is unchanged (so a caller keeps it without a copy).
std::optional<std::string> redacted_json_body(std::string_view body);

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
