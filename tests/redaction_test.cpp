// Tests of format/redaction.hpp: one secret policy, one marker. Each test plants a secret of one
// kind and checks that it is gone and that what is not secret is left byte for byte.
#include <catch2/catch.hpp>

#include <boost/json.hpp>
#include <cctype>

#include "format/redaction.hpp"

using namespace retrace;

TEST_CASE("secret headers are found by name in any case") {
  for (auto name : secret_header_names()) {
    INFO(name);
    CHECK(is_secret_header(name));
    std::string upper(name);
    for (auto& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    CHECK(is_secret_header(upper));
  }
  for (std::string_view name : {"authorization", "PROXY-AUTHORIZATION", "x-goog-api-key",
                                "Ocp-Apim-Subscription-Key", "X-Amz-Security-Token",
                                "WWW-Authenticate", "set-cookie"})
    CHECK(is_secret_header(name));
}

TEST_CASE("secret headers are found by pattern and ordinary headers are not") {
  for (std::string_view name : {"X-Team-Token", "X-Client-Secret", "X-Db-Password", "X-Session-Id",
                                "X-Custom-Auth", "X-Cookie-Jar", "Subscription_Key", "X-ApiKey"})
    CHECK(is_secret_header(name));
  for (std::string_view name : {"Content-Type", "Accept", "Keep-Alive", "X-Request-Id", "Host",
                                "User-Agent", "X-Monkey", "Content-Length", "X-Conversation"})
    CHECK_FALSE(is_secret_header(name));
}

TEST_CASE("secret query parameters lose their values and the rest of the target stays") {
  CHECK(redact_query("/v1/models?key=AIza123") == "/v1/models?key=[redacted]");
  CHECK(redact_query("/openai/deployments/d/chat/completions?api-version=2024-02-01&api-key=abc") ==
        "/openai/deployments/d/chat/completions?api-version=2024-02-01&api-key=[redacted]");
  CHECK(redact_query("/x?ACCESS_TOKEN=t&a=1&token=u&&b") == "/x?ACCESS_TOKEN=[redacted]&a=1&token=[redacted]&&b");
  // Nothing secret: the same bytes.
  for (std::string_view target : {"/v1/chat/completions", "/x?a=1&b=2&", "/x?", "/x?monkey=1&keys=2"})
    CHECK(redact_query(target) == target);
}

TEST_CASE("secret top-level body fields lose their values and everything else stays") {
  auto redacted = redact_json_body(
      R"({"model":"m","api_key":"sk-1","password":12345,"token":"t","messages":[{"role":"user","content":"hi"}]})");
  CHECK(redacted.find("sk-1") == std::string::npos);
  CHECK(redacted.find("12345") == std::string::npos);
  auto object = boost::json::parse(redacted).as_object();
  CHECK(object.at("api_key").as_string() == kRedacted);
  CHECK(object.at("password").as_string() == kRedacted);
  CHECK(object.at("token").as_string() == kRedacted);
  CHECK(object.at("model").as_string() == "m");
  CHECK(object.at("messages").as_array().size() == 1);
  // Deeper fields are prompt content or tool schemas and replay unchanged; so do non-objects,
  // bodies that are not JSON, and bodies naming no secret field (byte for byte).
  for (std::string_view body :
       {R"({"tools":[{"parameters":{"properties":{"token":{"type":"string"}}}}]})",
        R"({ "model" : "m",  "max_tokens": 16 })", R"(["api_key"])", R"({"api_key": broken)", ""})
    CHECK(redact_json_body(body) == body);
}

TEST_CASE("a Redactor adds the user's names and redacts nothing when told to keep secrets") {
  Request request;
  request.target = "/v1/chat/completions?key=k1";
  request.body = R"({"secret":"s1","model":"m"})";
  request.headers = {{"Authorization", "Bearer a1"}, {"X-Team-Id", "t1"}, {"Accept", "*/*"}};
  Request kept = request;

  Redactor(false, {"x-team-id"}).apply(request);
  CHECK(request.target == "/v1/chat/completions?key=[redacted]");
  CHECK(request.body.find("s1") == std::string::npos);
  CHECK(request.headers[0].value == kRedacted);
  CHECK(request.headers[1].value == kRedacted);
  CHECK(request.headers[2].value == "*/*");

  Request verbatim = kept;
  Redactor(true, {"x-team-id"}).apply(verbatim);
  CHECK(verbatim == kept);
  CHECK_FALSE(Redactor(true, {}).redacts("Authorization"));
}

TEST_CASE("the one marker is recognised and so is the marker of older sweep plans") {
  CHECK(is_redaction_marker(kRedacted));
  CHECK(is_redaction_marker("<redacted: pass --header again on --resume>"));
  CHECK_FALSE(is_redaction_marker("Bearer sk-1"));
  CHECK_FALSE(is_redaction_marker(""));
}

TEST_CASE("secret names are matched in any spelling after percent and JSON decoding") {
  for (std::string_view name : {"x-goog-api-key", "subscription-key", "code", "accessToken", "jwt",
                                "api%5Fkey", "X-Amz-Credential", "API_KEY", "apiKey", "id_token"})
    CHECK(is_secret_query_parameter(name));
  for (std::string_view name : {"api-version", "model", "keys", "monkey", "max_tokens", "stream"})
    CHECK_FALSE(is_secret_query_parameter(name));
  for (std::string_view name : {"XApiKey", "X-Signature", "X-Credential", "OpenAI-Organization"})
    CHECK(is_secret_header(name));
  CHECK_FALSE(is_secret_header("Access-Control-Allow-Credentials"));
  for (std::string_view name : {"apiKey", "API_KEY", "refresh_token", "id_token", "private_key",
                                "aws_secret_access_key", "user_jwt", "password", "token"})
    CHECK(is_secret_body_field(name));
  for (std::string_view name : {"max_tokens", "max_completion_tokens", "key", "code", "model",
                                "logprobs", "skip_special_tokens", "content"})
    CHECK_FALSE(is_secret_body_field(name));
}

TEST_CASE("nested secret body fields and escaped names lose their values and schemas stay") {
  auto redacted = redact_json_body(
      R"({"model":"m","max_tokens":5,"metadata":{"user_jwt":"j1","auth":{"id_token":"i1"},"password":"p1",)"
      R"("token":"t1","note":"kept"},"api\u005fkey":"k1","tools":[{"parameters":{"properties":{"token":{"type":"string"}}}}]})");
  for (std::string_view secret : {"j1", "i1", "p1", "t1", "k1"}) {
    INFO(secret);
    CHECK(redacted.find("\"" + std::string(secret) + "\"") == std::string::npos);
  }
  auto object = boost::json::parse(redacted).as_object();
  CHECK(object.at("metadata").at("note").as_string() == "kept");
  CHECK(object.at("max_tokens").as_int64() == 5);
  CHECK(object.at("tools").at(0).at("parameters").at("properties").at("token").at("type").as_string() == "string");
}

TEST_CASE("JWTs and self-describing keys are secrets by value wherever they stand") {
  const std::string jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl";
  for (const std::string& value : {jwt, "Bearer " + jwt, std::string("sk-proj-abcdefghijklmnopqrstuvwxyz"),
                                   std::string("AKIAABCDEFGHIJKLMNOP"),
                                   std::string("AIzaSyA1234567890abcdefghijklmnopqrstuv"),
                                   std::string("ghp_abcdefghijklmnopqrstuvwxyz0123456789"),
                                   std::string("hf_abcdefghijklmnopqrstuvwxyz01234567"),
                                   std::string("-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----")})
    CHECK(is_secret_value(value));
  for (std::string_view value : {"sk-short", "hello world", "eyJ not a token", "application/json", "AKIA"})
    CHECK_FALSE(is_secret_value(value));
  auto body = redact_json_body(R"({"messages":[{"role":"user","content":")" + jwt + R"("}],"x":{"y":"ok"}})");
  CHECK(body.find(jwt) == std::string::npos);
  CHECK(redact_query("/x?a=" + jwt + "&b=2") == "/x?a=[redacted]&b=2");
}

TEST_CASE("URL-valued headers and form-encoded bodies lose their secret parameters") {
  Request request;
  request.target = "/v1/x?api%5Fkey=k1&subscription-key=k2&ok=1";
  request.headers = {{"Referer", "https://a.example/p?token=t1&q=1"},
                     {"X-Original-URL", "/v1/x?code=c1"},
                     {"Content-Type", "application/x-www-form-urlencoded"},
                     {"X-Trace", "eyJhbGciOiJub25lIn0.eyJzdWIiOiIxIn0."}};
  request.body = "grant_type=refresh&refresh_token=r1&client_secret=s1&scope=all";
  Redactor().apply(request);
  CHECK(request.target == "/v1/x?api%5Fkey=[redacted]&subscription-key=[redacted]&ok=1");
  CHECK(request.headers[0].value == "https://a.example/p?token=[redacted]&q=1");
  CHECK(request.headers[1].value == "/v1/x?code=[redacted]");
  CHECK(request.headers[2].value == "application/x-www-form-urlencoded");
  CHECK(request.headers[3].value == kRedacted);
  CHECK(request.body == "grant_type=refresh&refresh_token=[redacted]&client_secret=[redacted]&scope=all");
}

// The look at the text that lets most bodies skip parsing (redaction.cpp, may_hold_secret) reads
// each string as a name or a value by what follows it. Every way a secret can stand, with
// whitespace anywhere JSON allows it, at growing depth and after prompts of growing size (up to a
// production prompt of 200 KB), must still be found; and a prompt that only talks about
// passwords and tokens is not a secret.
TEST_CASE("secrets are found wherever JSON lets them stand, after prompts of any size") {
  const std::string jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln";
  const std::vector<std::pair<std::string, std::string>> planted = {
      {R"("api_key":"v1")", "v1"},
      {"\"client_secret\" \t\r\n:\n \"v2\"", "v2"},
      {R"("Password" : 12345)", "12345"},
      {R"("x":[1,"sk-abcdefghijklmnopqrstuvwxyz"])", "sk-abcdefghijklmnopqrstuvwxyz"},
      {R"("header":"Bearer )" + jwt + "\"", jwt},
      {R"("auth":true)", "true"},
      {R"("deep":{"deeper":[{"access-token":"v3"}]})", "v3"},
  };
  std::string prompt;
  for (std::size_t size = 1; size <= 200'000; size = size * 3 + 1) {
    while (prompt.size() < size) prompt += "the password and the token: a 'quoted' word, max_tokens. ";
    const std::string messages = R"("messages":[{"role":"user","content":")" + prompt.substr(0, size) + "\"}]";
    // Named in the prompt only: unchanged, byte for byte.
    const std::string plain = "{" + messages + R"(,"max_tokens":16})";
    INFO("prompt of " << size << " bytes");
    CHECK(redact_json_body(plain) == plain);
    for (const auto& [member, secret] : planted) {
      INFO(member);
      for (const std::string& body : {"{" + messages + "," + member + "}", "{ " + member + " ,\n" + messages + "}"}) {
        const auto redacted = redact_json_body(body);
        CHECK(redacted.find(secret) == std::string::npos);
        CHECK(redacted.find(kRedacted) != std::string::npos);
      }
    }
  }
  // With an escape anywhere the body is parsed: an escaped name is still a name.
  const std::string escaped = R"({"messages":[{"role":"user","content":"a \"quoted\" word"}],"api\u005fkey":"v4"})";
  CHECK(redact_json_body(escaped).find("v4") == std::string::npos);
}
