// A prepared request's wire head (replay/prepare.cpp) against what Beast prints.
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <catch2/catch.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "net/url.hpp"
#include "replay/prepare.hpp"
#include "replay/replay.hpp"

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
    replay::PreparedRequest prepared;
    prepared.verb = c.verb;
    prepared.target = c.target;
    prepared.headers = std::make_shared<const std::vector<HttpHeader>>(c.headers);
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
  replay::PreparedRequest trace;
  trace.verb = http::verb::trace;
  trace.target = "/";
  CHECK_THROWS(replay::wire_head(trace, "a body"));
}

TEST_CASE("the copies --requests makes of an input exchange share one prepared request") {
  LoadedTrace input;
  for (int i = 0; i < 2; ++i) {
    Exchange exchange;
    exchange.id = static_cast<std::uint64_t>(i);
    exchange.request.method = "POST";
    exchange.request.target = "/v1/completions";
    exchange.request.headers = {{"Authorization", "Bearer recorded"}, {"X-Trace", std::to_string(i)}};
    exchange.request.body = R"({"model":"m","prompt":"question )" + std::to_string(i) + R"(","max_tokens":4})";
    input.exchanges.push_back(exchange);
  }
  replay::Options options;
  options.requests = 5;
  options.stream = true;
  options.set = {{"temperature", "0"}};
  replay::Preflight checked;
  checked.url = net::parse_url("http://127.0.0.1:9");
  auto chosen = replay::select_exchanges(input.exchanges, options, false);
  REQUIRE(chosen == std::vector<std::size_t>{0, 1, 0, 1, 0});
  auto sends = replay::prepare_requests(input, chosen, options, checked);
  REQUIRE(sends.size() == 5);
  for (std::size_t i = 0; i < sends.size(); ++i) {
    INFO("send " << i);
    CHECK(sends[i].input_index == i % 2);
    CHECK(sends[i].cycle == i / 2);
    REQUIRE(sends[i].request != nullptr);
    // Each copy is the request its input exchange prepares to, once: the same object.
    CHECK(sends[i].request == sends[i % 2].request);
  }
  // What the one preparation made of each input (the copies send exactly this).
  for (std::size_t i = 0; i < 2; ++i) {
    const auto& request = *sends[i].request;
    CHECK(request.body == R"({"model":"m","prompt":"question )" + std::to_string(i) +
                              R"(","max_tokens":4,"stream":true,"stream_options":{"include_usage":true},"temperature":0})");
    CHECK(request.key == request_key("POST", request.target, request.body));
    CHECK(request.head == replay::wire_head(request, request.body));
    CHECK(request.head.find("X-Trace: " + std::to_string(i)) != std::string::npos);
    CHECK(request.head.find("recorded") == std::string::npos);  // a recorded secret is not resent
  }
  CHECK(sends[0].request != sends[1].request);
}

TEST_CASE("a request that would put a line on the wire is refused where replay prepares it") {
  // The trace reader leaves such a record out; a LoadedTrace built in memory (or a --header, a
  // base path) reaches preparation all the same (#34 item 4).
  Exchange clean;
  clean.id = 7;
  clean.request.method = "POST";
  clean.request.target = "/v1/completions";
  clean.request.body = R"({"prompt":"x"})";
  replay::Options options;
  replay::Preflight checked;
  checked.url = net::parse_url("http://127.0.0.1:9");
  replay::Preparer prepare(options, checked);
  CHECK(prepare(clean)->head.find("POST /v1/completions HTTP/1.1\r\n") == 0);

  auto value = clean;
  value.request.headers = {{"X-A", "a\r\nInjected: yes"}};
  auto target = clean;
  target.request.target = "/v1/x HTTP/1.1\r\n\r\nPOST /v1/y";
  auto name = clean;
  name.request.headers = {{"X-A\r\nInjected", "yes"}};
  for (const auto& bad : {value, target, name}) {
    INFO(bad.request.target);
    CHECK_THROWS_WITH(prepare(bad), Catch::Contains("exchange 7: its request cannot go on the wire: ") &&
                                        Catch::Contains("; use --filter to leave it out"));
  }
  replay::Options with_header;
  with_header.headers = {{"X-Extra", "b\nInjected: yes"}};
  replay::Preparer prepare_with_header(with_header, checked);
  CHECK_THROWS_WITH(prepare_with_header(clean), Catch::Contains("its request cannot go on the wire"));
}

TEST_CASE("requests prepared one after another each get the headers and head a fresh preparation gives") {
  // Preparer keeps the last frame (a request's headers, syntax check and head up to its
  // Content-Length) while the next requests' method, target and headers are equal: each request
  // here must come out as a Preparer that never saw the others prepares it.
  replay::Options options;
  options.headers = {{"X-Run", "r1"}};
  replay::Preflight checked;
  checked.url = net::parse_url("http://127.0.0.1:9/base");
  replay::Preparer prepare(options, checked);
  auto make = [](std::string method, std::string target, std::vector<HttpHeader> headers, std::string body) {
    static std::uint64_t id = 0;
    Exchange exchange;
    exchange.id = ++id;
    exchange.request.method = std::move(method);
    exchange.request.target = std::move(target);
    exchange.request.headers = std::move(headers);
    exchange.request.body = std::move(body);
    return exchange;
  };
  const std::vector<HttpHeader> client{{"Content-Type", "application/json"}, {"User-Agent", "a"}};
  const std::vector<Exchange> inputs{
      make("POST", "/v1/completions", client, R"({"prompt":"1"})"),
      make("POST", "/v1/completions", client, R"({"prompt":"a longer prompt"})"),
      make("POST", "/v1/completions", client, R"({"prompt":")" + std::string(100'000, 'x') + R"("})"),
      make("POST", "/v1/completions", client, ""),
      make("POST", "/v1/completions", client, "0123456789"),
      make("POST", "/v1/completions", {{"Content-Type", "application/json"}, {"User-Agent", "b"}}, "{}"),
      make("POST", "/v1/chat/completions", {{"Content-Type", "application/json"}, {"User-Agent", "b"}}, "{}"),
      make("", "/v1/chat/completions", {{"Content-Type", "application/json"}, {"User-Agent", "b"}}, "{}"),
      make("POST", "v1/completions", {{"content-length", "3"}, {"Connection", "close"}}, R"({"prompt":"y"})"),
      make("POST", "/v1/completions", {{"Transfer-Encoding", "gzip"}, {"Authorization", "[redacted]"}}, "{}"),
      make("GET", "/v1/models", {}, ""),
      make("GET", "/v1/models", {}, "a body"),
      make("PUT", "/v1/models", {}, ""),
      make("PUT", "/v1/models", {}, "x"),
      make("TRACE", "/", {}, "a body"),
      make("POST", "/v1/completions", {{"X-Long", std::string(70'000, 'v')}}, "{}"),
      make("POST", "/v1/completions", client, R"({"prompt":"1"})"),
  };
  // Each three times in a row, its body longer each time (spaces after it): the first is prepared
  // alone, the second keeps its frame, the third reuses it.
  std::vector<Exchange> sends;
  for (const auto& input : inputs)
    for (std::size_t spaces : {0, 1, 200}) {
      auto send = input;
      if (!send.request.body.empty()) send.request.body += std::string(spaces, ' ');
      sends.push_back(std::move(send));
    }
  for (const auto& input : sends) {
    INFO("exchange " << input.id << ": " << input.request.method << " " << input.request.target << ", "
                     << input.request.body.size() << " bytes");
    auto reused = prepare(input);
    auto fresh = replay::Preparer(options, checked)(input);
    REQUIRE((reused->headers && fresh->headers && reused->recorded_headers && fresh->recorded_headers));
    CHECK(*reused->headers == *fresh->headers);
    CHECK(*reused->recorded_headers == *fresh->recorded_headers);
    CHECK(reused->method == fresh->method);
    CHECK(reused->target == fresh->target);
    CHECK(reused->body == fresh->body);
    CHECK(reused->key == fresh->key);
    CHECK(reused->head == fresh->head);
    // The head a whole Beast request gives, or none where Beast refuses it.
    std::string whole;
    try {
      whole = replay::wire_head(*reused, reused->body);
    } catch (const std::exception&) {
    }
    CHECK(reused->head == whole);
  }
}
