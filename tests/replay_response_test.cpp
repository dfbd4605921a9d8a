// read_response_part against a real loopback upstream whose bytes the test writes by hand:
// what one call hands over, and that it does not wait for bytes the upstream has not sent.
// (No co_await inside Catch's assertion macros: GCC 12 evaluates the expression twice there.)
#include <catch2/catch.hpp>

#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/error.hpp>

#include "net/connection.hpp"
#include "replay/response_reader.hpp"
#include "net/url.hpp"

using namespace retrace;
using namespace retrace::net;
using retrace::replay::read_response_part;
using retrace::replay::ResponsePartParser;
namespace http = boost::beast::http;

namespace {

// One connection to a loopback listener, the listener's end of it (`peer`) written by the test.
struct Upstream {
  asio::io_context io;
  tcp::acceptor acceptor{io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)};
  tcp::socket peer{io};
  std::unique_ptr<UpstreamConnection> connection;
  ResponsePartParser parser;
  char body[4096];

  Upstream() {
    acceptor.async_accept(peer, [](error_code) {});
    connection = std::make_unique<UpstreamConnection>(
        io.get_executor(), parse_url("http://127.0.0.1:" + std::to_string(acceptor.local_endpoint().port())),
        nullptr);
    std::optional<error_code> connected;
    connection->async_connect(std::chrono::seconds(5), [&](error_code ec, Phase) { connected = ec; });
    io.run();
    io.restart();
    REQUIRE(connected);
    REQUIRE_FALSE(*connected);
    parser.body_limit(boost::none);
  }
  void send(std::string_view bytes) { asio::write(peer, asio::buffer(bytes)); }
  // Runs `steps` on the io_context. A read that waits for bytes the test sends only after it
  // returns would wait for ever: a guard closes the connection after 20 s (then the read fails).
  void run(std::function<asio::awaitable<void>()> steps) {
    asio::steady_timer guard(io, std::chrono::seconds(20));
    guard.async_wait([&](error_code ec) {
      if (!ec) connection->close();
    });
    std::exception_ptr failure;
    asio::co_spawn(io, steps(), [&](std::exception_ptr e) {
      failure = e;
      guard.cancel();
    });
    io.run();
    if (failure) std::rethrow_exception(failure);
  }
  asio::awaitable<error_code> head() { co_return co_await read_response_part(*connection, parser, true); }
  // The next part of the body, as the bytes it put in the body buffer.
  asio::awaitable<std::string> part(error_code& ec) {
    parser.get().body().data = body;
    parser.get().body().size = sizeof body;
    ec = co_await read_response_part(*connection, parser, false);
    co_return std::string(body, sizeof body - parser.get().body().size);
  }
};

}  // namespace

TEST_CASE("a part holds every chunk already received, not one chunk", "[replay][response]") {
  Upstream upstream;
  // A token stream's head and three events, sent in one write: one read at the client.
  upstream.send(
      "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
      "6\r\ndata 1\r\n6\r\ndata 2\r\n6\r\ndata 3\r\n0\r\n\r\n");
  upstream.run([&]() -> asio::awaitable<void> {
    auto ec = co_await upstream.head();
    REQUIRE_FALSE(ec);
    CHECK(upstream.parser.is_header_done());
    CHECK(upstream.parser.get().result_int() == 200);
    auto part = co_await upstream.part(ec);
    CHECK_FALSE(ec);
    CHECK(part == "data 1data 2data 3");
    CHECK(upstream.parser.is_done());
  });
}

TEST_CASE("body bytes before a chunk header still on its way are handed over at once", "[replay][response]") {
  Upstream upstream;
  // The first event and the first byte of the next chunk's size: the rest follows only after
  // the client has handed the first event over (a read that waited for it would never return).
  upstream.send(
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
      "7\r\nevent 1\r\n1");
  upstream.run([&]() -> asio::awaitable<void> {
    auto head_ec = co_await upstream.head();
    REQUIRE_FALSE(head_ec);
    error_code ec;
    auto first = co_await upstream.part(ec);
    REQUIRE_FALSE(ec);
    CHECK(first == "event 1");
    CHECK_FALSE(upstream.parser.is_done());
    upstream.send("0\r\nthe sixteen byte\r\n0\r\n\r\n");
    std::string rest;
    while (!upstream.parser.is_done() && !ec) rest += co_await upstream.part(ec);
    CHECK_FALSE(ec);
    CHECK(rest == "the sixteen byte");
  });
}

TEST_CASE("a full body buffer, an end before the response and an end that ends a body", "[replay][response]") {
  SECTION("need_buffer when the body buffer is full, the rest in the next part") {
    Upstream upstream;
    std::string body(6000, 'x');
    upstream.send("HTTP/1.1 200 OK\r\nContent-Length: 6000\r\n\r\n" + body);
    upstream.run([&]() -> asio::awaitable<void> {
      auto head_ec = co_await upstream.head();
    REQUIRE_FALSE(head_ec);
      error_code ec;
      std::string got;
      while (!upstream.parser.is_done()) {
        got += co_await upstream.part(ec);
        CHECK((!ec || ec == http::error::need_buffer));
        if (ec && ec != http::error::need_buffer) break;
      }
      CHECK(got == body);
    });
  }
  SECTION("the connection closed before any byte of the response: end_of_stream") {
    Upstream upstream;
    upstream.peer.shutdown(tcp::socket::shutdown_send);
    upstream.run([&]() -> asio::awaitable<void> {
      auto head_ec = co_await upstream.head();
      CHECK(head_ec == http::error::end_of_stream);
    });
  }
  SECTION("a body without a length ends with the connection") {
    Upstream upstream;
    upstream.send("HTTP/1.1 200 OK\r\n\r\nuntil the end");
    upstream.peer.shutdown(tcp::socket::shutdown_send);
    upstream.run([&]() -> asio::awaitable<void> {
      auto head_ec = co_await upstream.head();
    REQUIRE_FALSE(head_ec);
      error_code ec;
      std::string got;
      while (!upstream.parser.is_done() && !ec) got += co_await upstream.part(ec);
      CHECK_FALSE(ec);
      CHECK(got == "until the end");
      CHECK_FALSE(upstream.parser.keep_alive());
    });
  }
  SECTION("a head over the parser's limit is refused") {
    Upstream upstream;
    upstream.parser.header_limit(1024);
    upstream.send("HTTP/1.1 200 OK\r\nX-Long: " + std::string(4000, 'a') + "\r\n\r\n");
    upstream.run([&]() -> asio::awaitable<void> {
      auto head_ec = co_await upstream.head();
      CHECK(head_ec == http::error::header_limit);
    });
  }
}
