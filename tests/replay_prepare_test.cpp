// A prepared request's wire head (replay/prepare.cpp) against what Beast prints.
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <catch2/catch.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "replay/prepare.hpp"

using namespace retrace;

TEST_CASE("a prepared request's head is the bytes Beast prints for the whole request's header") {
  namespace http = boost::beast::http;
  struct Case {
    http::verb verb;
    std::string target;
    std::vector<HttpHeader> headers;
    std::string body;
  };
  const std::vector<Case> cases{
      {http::verb::post, "/v1/completions", {{"Host", "127.0.0.1:8000"}, {"Content-Type", "application/json"}},
       R"({"prompt":"hi"})"},
      {http::verb::post, "/v1/completions", {{"Host", "h"}, {"Connection", "close"}}, ""},
      {http::verb::get, "/v1/models?x=1", {{"Host", "h"}, {"Accept-Encoding", "gzip"}}, ""},
      {http::verb::put, "/p", {{"Host", "h"}, {"X-Many", "a"}, {"x-many", "b"}}, std::string(70'000, 'b')},
      {http::verb::get, "/with-body", {{"Host", "h"}, {"Transfer-Encoding", "chunked"}}, "abc"},
  };
  for (const auto& c : cases) {
    replay::Prepared prepared;
    prepared.verb = c.verb;
    prepared.target = c.target;
    prepared.headers = c.headers;
    http::request<http::string_body> request{c.verb, c.target, 11};
    for (const auto& header : c.headers) request.insert(header.name, header.value);
    request.keep_alive(true);
    request.body() = c.body;
    if (!c.body.empty() || c.verb == http::verb::post) request.prepare_payload();
    std::ostringstream printed;
    printed << request.base();
    INFO(printed.str());
    CHECK(replay::wire_head(prepared, c.body) == printed.str());
  }
  // What Beast refuses to send, the head refuses too.
  replay::Prepared trace;
  trace.verb = http::verb::trace;
  trace.target = "/";
  CHECK_THROWS(replay::wire_head(trace, "a body"));
}
