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
