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

namespace {

// Secrets of every kind the policy knows, each with its own text (plant N), for the places below.
std::vector<std::pair<std::string, std::string>> planted_kinds() {  // member JSON, the secret's text
  std::vector<std::pair<std::string, std::string>> kinds;
  int n = 0;
  for (std::string name : {"api_key", "apiKey", "access_token", "refresh_token", "client_secret", "password",
                           "token", "auth", "sig", "private_key", "aws_secret_access_key", "id_token",
                           "session_token", "user_jwt", "signature", "X-Api-Key"}) {
    auto secret = "plant" + std::to_string(n++) + "value";
    kinds.emplace_back("\"" + name + "\":\"" + secret + "\"", secret);
  }
  for (std::string shape : {"sk-proj-abcdefghijklmnopqrstu", "AKIAABCDEFGHIJKLMNOP", "ghp_abcdefghijklmnopqrstuvwxyz0123",
                            "hf_abcdefghijklmnopqrstuvwxyz0123", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln"}) {
    auto secret = shape + std::to_string(n++);
    kinds.emplace_back("\"value\":\"" + secret + "\"", secret);
  }
  for (std::string parameter : {"X-Amz-Signature", "sig", "token", "key"}) {
    auto secret = "plant" + std::to_string(n++) + "url";
    kinds.emplace_back("\"url\":\"see https://bucket.example/o.png?X-Amz-Date=1&" + parameter + "=" + secret + " now\"",
                       secret);
  }
  return kinds;
}

// `json` (a JSON object's text) as a JSON string's text, escaped.
std::string as_string(const std::string& json) { return boost::json::serialize(boost::json::value(json)); }

// Every place a request body holds a secret: a top-level member, and each field that carries JSON
// inside a string: chat tool_calls arguments and tool messages, Responses function_call arguments
// and function_call_output, Messages tool_result contents (a string and a text block).
std::vector<std::string> planted_bodies(const std::string& member) {
  const auto inner = as_string("{\"q\":1," + member + "}");
  return {
      "{\"model\":\"m\"," + member + "}",
      R"({"messages":[{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":)" +
          inner + "}}]}]}",
      R"({"messages":[{"role":"tool","tool_call_id":"c","content":)" + inner + "}]}",
      R"({"input":[{"type":"function_call","call_id":"c","name":"f","arguments":)" + inner + "}]}",
      R"({"input":[{"type":"function_call_output","call_id":"c","output":)" + inner + "}]}",
      R"({"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":)" + inner + "}]}]}",
      R"({"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":)" +
          as_string("[" + as_string("{" + member + "}") + "]") + "}]}]}]}",
  };
}

}  // namespace

TEST_CASE("secrets planted in every place a body holds them never survive under either content type") {
  const auto kinds = planted_kinds();
  REQUIRE(kinds.size() == 25);
  std::size_t planted = 0;
  for (const auto& [member, secret] : kinds) {
    for (const auto& body : planted_bodies(member)) {
      for (std::string type : {"application/json", "application/x-www-form-urlencoded"}) {
        INFO(type << " " << body);
        Request request;
        request.target = "/v1/chat/completions";
        request.headers = {{"Content-Type", type}};
        request.body = body;
        Redactor().apply(request);
        CHECK(request.body.find(secret) == std::string::npos);
        CHECK(request.body.find(kRedacted) != std::string::npos);
        // Still JSON, and a second pass has nothing left to do.
        CHECK(is_json_object(request.body));
        CHECK(redact_json_body(request.body) == request.body);
        ++planted;
      }
    }
  }
  CHECK(planted == 25 * 7 * 2);
}

TEST_CASE("JSON inside strings is redacted only within its bounds and otherwise left byte for byte") {
  // Arguments without a secret keep their bytes, whitespace and all.
  const std::string clean =
      R"({"messages":[{"role":"tool","content":"{ \"city\" : \"Paris\", \"n\": 1.50 }"}]})";
  CHECK(redact_json_body(clean) == clean);
  // Strings of JSON nested deeper than the bound are not parsed: each level costs a pass.
  std::string member = R"({"api_key":"deepsecret"})";
  for (int depth = 0; depth < 6; ++depth) member = "{\"a\":" + as_string(member) + "}";
  CHECK(redact_json_body(member) == member);
  std::string shallow = R"({"api_key":"s3"})";
  for (int depth = 0; depth < 3; ++depth) shallow = "{\"a\":" + as_string(shallow) + "}";
  CHECK(redact_json_body(shallow).find("s3") == std::string::npos);
  // A string that only looks like JSON stays as it is.
  const std::string broken = R"({"content":"{\"api_key\": oops"})";
  CHECK(redact_json_body(broken) == broken);
}

TEST_CASE("presigned URLs in body strings lose their signatures and keep everything else") {
  CHECK(redact_urls("a https://s3.example/o?X-Amz-Date=1&X-Amz-Signature=abc b http://x/y?sig=z&w=1") ==
        "a https://s3.example/o?X-Amz-Date=1&X-Amz-Signature=[redacted] b http://x/y?sig=[redacted]&w=1");
  CHECK(redact_urls("no urls, nor https:// alone, nor ftp://h/?key=1") == "no urls, nor https:// alone, nor ftp://h/?key=1");
  CHECK(redact_urls("https://h/p?q=1") == "https://h/p?q=1");
  const std::string body = R"({"image_url":{"url":"https://h.example/i.png?token=t0p&size=2"}})";
  CHECK(redact_json_body(body) == R"({"image_url":{"url":"https://h.example/i.png?token=[redacted]&size=2"}})");
}

TEST_CASE("the signature of an Anthropic thinking block stays and credentials beside it go") {
  const std::string body =
      R"({"x-api-key":"k1","messages":[{"role":"assistant","content":[{"type":"thinking","thinking":"t",)"
      R"("signature":"ErUBCkYIBRgCIkDsig=="},{"type":"other","signature":"s2"},)"
      R"({"type":"thinking","signature":"sk-ant-abcdefghijklmnopqrstuvwx"}]}]})";
  const auto redacted = redact_json_body(body);
  CHECK(redacted.find("ErUBCkYIBRgCIkDsig==") != std::string::npos);
  CHECK(redacted.find("k1") == std::string::npos);
  CHECK(redacted.find("s2") == std::string::npos);
  CHECK(redacted.find("sk-ant-") == std::string::npos);
}

TEST_CASE("a form body that is not JSON is still redacted as a form") {
  Request request;
  request.headers = {{"content-type", "application/x-www-form-urlencoded; charset=utf-8"}};
  request.body = "{not json&api_key=k9";
  Redactor().apply(request);
  CHECK(request.body == "{not json&api_key=[redacted]");
}
