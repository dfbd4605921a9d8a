// read_response_part and read_response_body against a real loopback upstream whose bytes the
// test writes by hand: what one call hands over, and that it does not wait for bytes the upstream
// has not sent.
// (No co_await inside Catch's assertion macros: GCC 12 evaluates the expression twice there.)
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <utility>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/error.hpp>

#include "net/arrived_body.hpp"
#include "net/connection.hpp"
#include "replay/response_reader.hpp"
#include "net/url.hpp"
#include "tests/run_guarded.hpp"

using namespace retrace;
using namespace retrace::net;
using retrace::replay::ArrivedPartParser;
using retrace::replay::read_response_body;
using retrace::replay::read_response_part;
namespace http = boost::beast::http;

namespace {

// Every read's bytes of `body` in order.
std::vector<std::string> reads_of(const ArrivedBody& body) {
  std::vector<std::string> reads(1);
  body.for_each_read([&](std::string_view piece, std::int64_t, bool read_ends) {
    reads.back() += piece;
    if (read_ends) reads.emplace_back();
    return true;
  });
  reads.pop_back();
  return reads;
}

// One connection to a loopback listener, the listener's end of it (`peer`) written by the test.
struct Upstream {
  asio::io_context io;
  tcp::acceptor acceptor{io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)};
  tcp::socket peer{io};
  std::unique_ptr<UpstreamConnection> connection;

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
  }
  void send(std::string_view bytes) { asio::write(peer, asio::buffer(bytes)); }
  // Runs `steps` on the io_context. A read that waits for bytes the test sends only after it
  // returns would wait for ever: a guard closes the connection after 20 s (then the read fails).
  void run(const std::function<asio::awaitable<void>()>& steps) {
    run_guarded(io, [&] { connection->close(); }, steps);
  }

  // Replay's way: the parser puts body bytes straight into `arrived`, each read marked.
  ArrivedPartParser arrived_parser;
  ArrivedBody arrived;
  std::size_t marked = 0;  // reads marked
  asio::awaitable<error_code> arrived_head() {
    arrived_parser.body_limit(boost::none);
    arrived_parser.get().body().body = &arrived;
    co_return co_await read_response_part(*connection, arrived_parser, true);
  }
  // The next part of the body: the bytes one read_response_part put in `arrived` (marked as a
  // read of their own).
  asio::awaitable<std::string> arrived_part(error_code& ec) {
    ec = co_await read_response_part(*connection, arrived_parser, false);
    auto& value = arrived_parser.get().body();
    if (value.taken == 0) co_return std::string();
    arrived.mark_read(std::exchange(value.taken, 0), std::int64_t(++marked));
    co_return reads_of(arrived).back();
  }
  // Reads parts until the response is done or fails (the read's error, or the parser's), as the
  // worker does: read_response_body, each part marked as a read of its own.
  asio::awaitable<error_code> arrived_parts() {
    auto& value = arrived_parser.get().body();
    co_return co_await read_response_body(*connection, arrived_parser, [&](error_code) {
      if (value.taken > 0) arrived.mark_read(std::exchange(value.taken, 0), std::int64_t(++marked));
    });
  }
  // The head, then every part: the first error.
  asio::awaitable<error_code> arrived_response() {
    auto ec = co_await arrived_head();
    if (!ec) ec = co_await arrived_parts();
    co_return ec;
  }
  // Sends `bytes` once the client waits for them (a posted handler runs after it suspends).
  void send_later(std::string bytes) {
    asio::post(io, [this, bytes = std::move(bytes)] { send(bytes); });
  }
};

std::string chunk(std::string_view bytes) {
  char size[24];
  std::snprintf(size, sizeof size, "%zx\r\n", bytes.size());
  return size + std::string(bytes) + "\r\n";
}

// An event of about the size of a streamed token with logprobs (~370 bytes).
std::string token_event(std::size_t i) {
  std::string text = "tok" + std::to_string(i);
  return "data: {\"choices\":[{\"index\":0,\"text\":\"" + text + "\",\"logprobs\":{\"tokens\":[\"" + text +
         "\"],\"token_logprobs\":[-0.25],\"top_logprobs\":[{\"" + text + "\":-0.25,\" other\":-1.5}]}}]," +
         std::string(220, 'p') + "}\n\n";
}

const std::string kStreamHead = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n";

}  // namespace

TEST_CASE("a part holds every chunk already received not one chunk", "[replay][response]") {
  Upstream upstream;
  // A token stream's head and three events, sent in one write: one read at the client.
  upstream.send(
      "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
      "6\r\ndata 1\r\n6\r\ndata 2\r\n6\r\ndata 3\r\n0\r\n\r\n");
  upstream.run([&]() -> asio::awaitable<void> {
    auto ec = co_await upstream.arrived_head();
    REQUIRE_FALSE(ec);
    CHECK(upstream.arrived_parser.is_header_done());
    CHECK(upstream.arrived_parser.get().result_int() == 200);
    auto part = co_await upstream.arrived_part(ec);
    CHECK_FALSE(ec);
    CHECK(part == "data 1data 2data 3");
    CHECK(upstream.arrived_parser.is_done());
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
    auto head_ec = co_await upstream.arrived_head();
    REQUIRE_FALSE(head_ec);
    error_code ec;
    auto first = co_await upstream.arrived_part(ec);
    REQUIRE_FALSE(ec);
    CHECK(first == "event 1");
    CHECK_FALSE(upstream.arrived_parser.is_done());
    upstream.send("0\r\nthe sixteen byte\r\n0\r\n\r\n");
    std::string rest;
    while (!upstream.arrived_parser.is_done() && !ec) rest += co_await upstream.arrived_part(ec);
    CHECK_FALSE(ec);
    CHECK(rest == "the sixteen byte");
  });
}

TEST_CASE("a length at the body limit and one past it and an end before the response and an end that ends a body",
          "[replay][response]") {
  // The arrived path's one bound is the body's limit (--max-response-bytes): a Content-Length
  // body of exactly the limit completes, one byte more stops at it with what fit kept.
  const std::string body(6000, 'x');
  for (std::size_t limit : {body.size(), body.size() - 1}) {
    DYNAMIC_SECTION("a body of 6000 bytes with a limit of " << limit) {
      Upstream upstream;
      upstream.send("HTTP/1.1 200 OK\r\nContent-Length: 6000\r\n\r\n" + body);
      upstream.run([&]() -> asio::awaitable<void> {
        auto head_ec = co_await upstream.arrived_head();
        REQUIRE_FALSE(head_ec);
        upstream.arrived_parser.get().body().limit = limit;
        auto ec = co_await upstream.arrived_parts();
        if (limit == body.size()) {
          CHECK_FALSE(ec);
          CHECK(upstream.arrived_parser.is_done());
          CHECK_FALSE(upstream.arrived_parser.get().body().past_limit);
        } else {
          CHECK(ec == http::error::body_limit);
          CHECK(upstream.arrived_parser.get().body().past_limit);
        }
      });
      CHECK(upstream.arrived.reads() == upstream.marked);
      CHECK(upstream.arrived.take_all() == body.substr(0, limit));
    }
  }
  SECTION("the connection closed before any byte of the response: end_of_stream") {
    Upstream upstream;
    upstream.peer.shutdown(tcp::socket::shutdown_send);
    upstream.run([&]() -> asio::awaitable<void> {
      auto head_ec = co_await upstream.arrived_head();
      CHECK(head_ec == http::error::end_of_stream);
    });
  }
  SECTION("a body without a length ends with the connection") {
    Upstream upstream;
    upstream.send("HTTP/1.1 200 OK\r\n\r\nuntil the end");
    upstream.peer.shutdown(tcp::socket::shutdown_send);
    upstream.run([&]() -> asio::awaitable<void> {
      auto head_ec = co_await upstream.arrived_head();
      REQUIRE_FALSE(head_ec);
      error_code ec;
      std::string got;
      while (!upstream.arrived_parser.is_done() && !ec) got += co_await upstream.arrived_part(ec);
      CHECK_FALSE(ec);
      CHECK(got == "until the end");
      CHECK_FALSE(upstream.arrived_parser.keep_alive());
    });
  }
  SECTION("a body without a length read whole ends with the connection") {
    Upstream upstream;
    upstream.send("HTTP/1.1 200 OK\r\n\r\nuntil ");
    upstream.run([&]() -> asio::awaitable<void> {
      auto head_ec = co_await upstream.arrived_head();
      REQUIRE_FALSE(head_ec);
      asio::post(upstream.io, [&] {
        upstream.send("the end");
        upstream.peer.shutdown(tcp::socket::shutdown_send);
      });
      auto ec = co_await upstream.arrived_parts();
      CHECK_FALSE(ec);
      CHECK(upstream.arrived_parser.is_done());
      CHECK_FALSE(upstream.arrived_parser.keep_alive());
    });
    CHECK(upstream.arrived.reads() == upstream.marked);
    CHECK(upstream.arrived.take_all() == "until the end");
  }
  SECTION("a head over the parser's limit is refused") {
    Upstream upstream;
    upstream.arrived_parser.header_limit(1024);
    upstream.send("HTTP/1.1 200 OK\r\nX-Long: " + std::string(4000, 'a') + "\r\n\r\n");
    upstream.run([&]() -> asio::awaitable<void> {
      auto head_ec = co_await upstream.arrived_head();
      CHECK(head_ec == http::error::header_limit);
    });
  }
}

TEST_CASE("a stream split at every byte reaches the arrived body whole with one mark a read", "[replay][response]") {
  std::string wire, expected;
  for (int i = 0; i < 3; ++i) {
    auto event = "data: {\"n\":" + std::to_string(i) + "}\n\n";
    wire += chunk(event);
    expected += event;
  }
  wire += "0\r\n\r\n";
  int wrong = 0;
  for (std::size_t at = 0; at <= wire.size(); ++at) {
    Upstream upstream;
    upstream.send(kStreamHead + wire.substr(0, at));
    upstream.run([&]() -> asio::awaitable<void> {
      auto head_ec = co_await upstream.arrived_head();
      REQUIRE_FALSE(head_ec);
      upstream.send_later(wire.substr(at));
      auto ec = co_await upstream.arrived_parts();
      auto reads = reads_of(upstream.arrived);
      std::string joined;
      for (const auto& read : reads) joined += read;
      const bool empty_read = std::any_of(reads.begin(), reads.end(), [](const std::string& r) { return r.empty(); });
      if (ec || !upstream.arrived_parser.is_done() || joined != expected || reads.size() != upstream.marked ||
          empty_read || upstream.arrived.size() != expected.size())
        ++wrong;
    });
  }
  CHECK(wrong == 0);
}

TEST_CASE("an arrived body of 0 bytes and one of 16k token events past its raw bound", "[replay][response]") {
  SECTION("0 bytes") {
    Upstream upstream;
    upstream.send(kStreamHead + "0\r\n\r\n");
    upstream.run([&]() -> asio::awaitable<void> {
      auto ec = co_await upstream.arrived_response();
      CHECK_FALSE(ec);
      CHECK(upstream.arrived_parser.is_done());
      CHECK(upstream.arrived.size() == 0);
      CHECK(upstream.arrived.reads() == 0);
    });
  }
  SECTION("16,000 events of ~370 bytes, written in bursts by another thread") {
    constexpr std::size_t kTokens = 16000;
    std::string expected;
    for (std::size_t i = 0; i < kTokens; ++i) expected += token_event(i);
    Upstream upstream;
    upstream.send(kStreamHead);
    std::thread writer([&] {
      try {  // a client that failed stops reading; the guard's close then fails these writes
        std::string burst;
        for (std::size_t i = 0; i < kTokens; ++i) {
          burst += chunk(token_event(i));
          if (i % 37 == 36) upstream.send(std::exchange(burst, {}));
        }
        upstream.send(burst + "0\r\n\r\n");
      } catch (const std::exception&) {
      }
    });
    upstream.run([&]() -> asio::awaitable<void> {
      auto ec = co_await upstream.arrived_response();
      CHECK_FALSE(ec);
      CHECK(upstream.arrived_parser.is_done());
    });
    writer.join();
    CHECK(upstream.arrived.reads() == upstream.marked);
    CHECK(upstream.arrived.compressed_blocks() > 0);  // past kMostRawBytes: sealed in blocks
    auto reads = reads_of(upstream.arrived);
    std::string joined;
    for (const auto& read : reads) joined += read;
    CHECK(joined.size() == expected.size());
    CHECK(joined == expected);
  }
}

TEST_CASE("an arrived body stops at its limit and keeps what fit", "[replay][response]") {
  std::string wire, expected;
  for (std::size_t i = 0; i < 10; ++i) {
    wire += chunk(token_event(i));
    expected += token_event(i);
  }
  Upstream upstream;
  upstream.send(kStreamHead + wire + "0\r\n\r\n");
  upstream.run([&]() -> asio::awaitable<void> {
    auto head_ec = co_await upstream.arrived_head();
    REQUIRE_FALSE(head_ec);
    upstream.arrived_parser.get().body().limit = 1000;
    auto ec = co_await upstream.arrived_parts();
    CHECK(ec == http::error::body_limit);
    CHECK(upstream.arrived_parser.get().body().past_limit);
  });
  CHECK(upstream.arrived.take_all() == expected.substr(0, 1000));
}

TEST_CASE("an arrived body cut mid-event keeps the event before and the half after", "[replay][response]") {
  Upstream upstream;
  upstream.send(kStreamHead + chunk(token_event(0)) + "200\r\ndata: half");
  upstream.run([&]() -> asio::awaitable<void> {
    auto head_ec = co_await upstream.arrived_head();
    REQUIRE_FALSE(head_ec);
    asio::post(upstream.io, [&] { upstream.peer.close(); });
    auto ec = co_await upstream.arrived_parts();
    CHECK(ec == http::error::partial_message);
  });
  CHECK(upstream.arrived.reads() == upstream.marked);
  CHECK(upstream.arrived.take_all() == token_event(0) + "data: half");
}

TEST_CASE("bodies of every size chunked every way or with a length arrive as main's path frames them and never regrow",
          "[replay][response]") {
  // One keep-alive connection, a writer thread sending every response back to back, as an
  // upstream answers a worker. Each body (every size to 400 B, then 5 % apart to 250 KB, of
  // token events, the last one cut mid-event) comes with a Content-Length, or chunked in 1-byte chunks, 7-byte chunks with an
  // extension, 370-byte chunks that split events, one chunk an event with a trailer, or 64 KiB
  // chunks; the events decode_arrived frames from it must be those it frames from the body
  // appended whole (main's path), and the raw tail must hold at the end what it held after the
  // first read: reserved once, from the length or (chunked) as a worker's later stream.
  std::string events;
  for (std::size_t i = 0; events.size() < 250'000; ++i) events += token_event(i);
  std::vector<std::size_t> sizes;
  for (std::size_t size = 1; size < 400; ++size) sizes.push_back(size);  // an event cut at every byte
  for (double size = 400; size <= 250'000; size *= 1.05) sizes.push_back(std::size_t(size));
  sizes.push_back(250'000);
  enum Framing { length, ones, sevens, splits, per_event, blocks, kFramings };
  auto wire_of = [&](std::string_view body, int framing) {
    if (framing == length)
      return "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: " + std::to_string(body.size()) +
             "\r\n\r\n" + std::string(body);
    std::string wire = kStreamHead;
    auto piece = [&](std::size_t at) -> std::size_t {
      switch (framing) {
        case ones: return 1;
        case sevens: return 7;
        case splits: return 370;
        case per_event: {
          auto end = body.find("\n\n", at);
          return end == std::string_view::npos ? body.size() - at : end + 2 - at;
        }
        default: return 64 << 10;
      }
    };
    for (std::size_t at = 0, n = 0; at < body.size(); at += n) {
      n = std::min(piece(at), body.size() - at);
      if (framing == sevens) {
        char size[32];
        std::snprintf(size, sizeof size, "%zx;ext=\"a b\"\r\n", n);
        wire += size + std::string(body.substr(at, n)) + "\r\n";
      } else {
        wire += chunk(body.substr(at, n));
      }
    }
    return wire + (framing == per_event ? "0\r\nX-Trailer: done\r\n\r\n" : "0\r\n\r\n");
  };
  Upstream upstream;
  std::thread writer([&] {
    try {  // a client that failed stops reading; the guard's close then fails these writes
      for (std::size_t size : sizes)
        for (int framing = 0; framing < kFramings; ++framing) upstream.send(wire_of(std::string_view(events).substr(0, size), framing));
    } catch (const std::exception&) {
    }
  });
  std::size_t bodies = 0, wrong = 0, regrown = 0;
  upstream.run([&]() -> asio::awaitable<void> {
    for (std::size_t size : sizes) {
      for (int framing = 0; framing < kFramings; ++framing) {
        ArrivedPartParser parser;
        ArrivedBody arrived;
        parser.body_limit(boost::none);
        parser.get().body().body = &arrived;
        auto ec = co_await read_response_part(*upstream.connection, parser, true);
        if (framing != length) arrived.reserve_like({size, 0, 0});  // a worker's later stream
        // What the tail holds once the first bytes are in (a length reserves as the parser
        // meets the body, past the head): the same as at the end, or it was regrown.
        std::size_t reserved = arrived.raw_capacity();
        std::int64_t read = 0;
        if (!ec)
          ec = co_await read_response_body(*upstream.connection, parser, [&](error_code) {
            auto& value = parser.get().body();
            if (value.taken == 0) return;
            arrived.mark_read(std::exchange(value.taken, 0), ++read);
            if (read == 1) reserved = arrived.raw_capacity();
          });
        ++bodies;
        if (ec) {
          ++wrong;
          co_return;  // the connection is out of step: nothing after this is worth reading
        }
        regrown += arrived.raw_capacity() != reserved || reserved < size;
        ArrivedBody whole;
        whole.append(std::string_view(events).substr(0, size), 1);
        Response got, expected;
        net::decode_arrived(arrived, true, "", got, nullptr, read + 1);
        net::decode_arrived(whole, true, "", expected, nullptr, 2);
        bool same = got.events.size() == expected.events.size() && got.events.bytes() == expected.events.bytes();
        for (std::size_t i = 0; same && i < got.events.size(); ++i) same = got.events[i].data == expected.events[i].data;
        wrong += !same;
      }
    }
  });
  writer.join();
  CHECK(bodies == sizes.size() * kFramings);
  CHECK(wrong == 0);
  CHECK(regrown == 0);
}
