// What an HTTP read can meet that Beast would throw for, and what a worker's loop does when a
// handler throws all the same (net/field_bounded_parser.hpp, net/run_handlers.hpp).
#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/http.hpp>

#include "net/field_bounded_parser.hpp"
#include "net/run_handlers.hpp"

using namespace retrace;
namespace http = boost::beast::http;

namespace {

// Feeds a whole message head to `parser`: the error it ends with.
template <class Parser>
boost::beast::error_code parse_head(Parser& parser, const std::string& head) {
  parser.header_limit(1u << 20);
  boost::beast::error_code ec;
  parser.put(boost::asio::buffer(head), ec);
  if (ec == http::error::need_more) ec = {};  // the head is whole; the body is not given
  return ec;
}

std::string response_with(const std::string& field) {
  return "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" + field + "\r\nContent-Length: 2\r\n\r\n";
}

}  // namespace

TEST_CASE("a header value longer than a field holds fails the read and names the field", "[net][parser]") {
  net::BoundedResponseParser<http::string_body> parser;
  auto ec = parse_head(parser, response_with("X-Big: " + std::string(65534, 'a')));
  CHECK(ec == http::error::header_limit);
  CHECK(parser.oversized() ==
        "header field X-Big: its value is 65534 bytes, over the 65533 bytes one field may hold");
}

TEST_CASE("a Content-Encoding list longer than a field holds fails the read", "[net][parser]") {
  std::string codings;
  while (codings.size() < 240000) codings += "br,";
  net::BoundedResponseParser<http::buffer_body> parser;
  CHECK(parse_head(parser, response_with("Content-Encoding: " + codings)) == http::error::header_limit);
  CHECK(parser.oversized().find("Content-Encoding: its value is 240000 bytes") != std::string::npos);
}

TEST_CASE("a header name longer than a field holds fails the read", "[net][parser]") {
  net::BoundedRequestParser<http::string_body> parser;
  auto ec = parse_head(parser, "GET / HTTP/1.1\r\n" + std::string(70000, 'X') + ": 1\r\n\r\n");
  CHECK(ec == http::error::header_limit);
  CHECK(parser.oversized() == "header field name of 70000 bytes, over the 65533 bytes one field may hold");
}

TEST_CASE("header fields up to the longest a field holds are kept as Beast keeps them", "[net][parser]") {
  net::BoundedResponseParser<http::string_body> parser;
  std::string value(net::kMaxFieldBytes, 'v');
  CHECK_FALSE(parse_head(parser, response_with("X-Big: " + value + "\r\nX-Two: 2\r\nX-Two: 3")));
  CHECK(parser.oversized().empty());
  const auto& response = parser.get();
  CHECK(response["X-Big"] == value);
  CHECK(response.count("X-Two") == 2);
  CHECK(response[http::field::content_type] == "application/json");
}

TEST_CASE("a handler that throws is reported and every other handler still runs", "[net][handlers]") {
  boost::asio::io_context io;
  std::vector<std::string> ran, thrown;
  boost::asio::post(io, [&] { ran.push_back("first"); });
  boost::asio::post(io, [] { throw std::length_error("field value too large"); });
  boost::asio::post(io, [&] { ran.push_back("after"); });
  boost::asio::post(io, [] { throw 42; });
  boost::asio::post(io, [&] { ran.push_back("last"); });
  net::run_handlers(io, [&](std::string_view what) { thrown.emplace_back(what); });
  CHECK(ran == std::vector<std::string>{"first", "after", "last"});
  CHECK(thrown == std::vector<std::string>{"field value too large",
                                           "an exception that is not a std::exception"});
}
