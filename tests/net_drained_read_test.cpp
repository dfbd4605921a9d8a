// net::async_read_drained against a real loopback connection whose peer the test writes by hand:
// a read after a drained read still sees every byte (those that arrived before it was issued,
// after it, and those a full read left behind), and end of stream and close are reported as
// async_read_some reports them. A read that waits for bytes that never come would wait for ever:
// a guard closes the socket after 20 s, and the read's error fails the test.
// (No co_await inside Catch's assertion macros: GCC 12 evaluates the expression twice there.)
#include <catch2/catch.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <tuple>
#include <vector>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include "net/drained_read.hpp"
#include "tests/run_guarded.hpp"

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;

namespace {

constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);

// A client socket connected to a peer socket the test writes, on one io_context.
struct Loopback {
  asio::io_context io;
  tcp::acceptor acceptor{io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)};
  tcp::socket client{io};
  tcp::socket peer{io};

  Loopback() {
    client.connect(acceptor.local_endpoint());
    acceptor.accept(peer);
    retrace::net::enable_drained_reads(client);
  }
  void send(std::string_view bytes) { asio::write(peer, asio::buffer(bytes)); }
  // Sends `bytes` once the client waits for them (a posted handler runs after it suspends).
  void send_later(std::string bytes) {
    asio::post(io, [this, bytes = std::move(bytes)] { send(bytes); });
  }
  void run(const std::function<asio::awaitable<void>()>& steps) {
    run_guarded(io, [&] { client.close(); }, steps);
  }
  // One read of at most `size` bytes.
  asio::awaitable<std::tuple<error_code, std::string>> read(std::size_t size) {
    std::string bytes(size, '\0');
    auto [ec, got] = co_await retrace::net::async_read_drained(client, asio::buffer(bytes), kTuple);
    bytes.resize(got);
    co_return std::tuple{ec, bytes};
  }
};

// An event of about the size of a streamed token with logprobs (~370 bytes).
std::string token_event(std::size_t i) {
  std::string text = "tok" + std::to_string(i);
  return "data: {\"choices\":[{\"index\":0,\"text\":\"" + text + "\",\"logprobs\":{\"tokens\":[\"" + text +
         "\"],\"token_logprobs\":[-0.25],\"top_logprobs\":[{\"" + text + "\":-0.25,\" other\":-1.5}]}}]," +
         std::string(220, 'p') + "}\n\n";
}

}  // namespace

TEST_CASE("a read after a drained read gets bytes that arrived before it was issued", "[net][drained]") {
  Loopback loopback;
  loopback.run([&]() -> asio::awaitable<void> {
    // The first read waits in the reactor; epoll wakes it and its recv drains the socket.
    loopback.send_later("abc");
    auto [first_ec, first] = co_await loopback.read(64);
    // Bytes that arrive before the next read is issued, with no epoll_wait in between: the next
    // read is not tried at once, so it must be woken by their arrival.
    loopback.send("defg");
    auto [second_ec, second] = co_await loopback.read(64);
    CHECK_FALSE(first_ec);
    CHECK(first == "abc");
    CHECK_FALSE(second_ec);
    CHECK(second == "defg");
  });
}

TEST_CASE("reads that fill their buffer leave the rest to the next read without new bytes", "[net][drained]") {
  Loopback loopback;
  std::string sent;
  for (int i = 0; i < 10'000; ++i) sent += static_cast<char>('a' + i % 26);
  loopback.send(sent);
  loopback.run([&]() -> asio::awaitable<void> {
    std::string got;
    error_code ec;
    for (int read = 0; read < 10 && !ec; ++read) {
      std::string bytes;
      std::tie(ec, bytes) = co_await loopback.read(1'000);
      got += bytes;
    }
    CHECK_FALSE(ec);
    CHECK(got == sent);
  });
}

TEST_CASE("16k events each sent after the last was read are read whole and in order and none before its send",
          "[net][drained]") {
  Loopback loopback;
  loopback.run([&]() -> asio::awaitable<void> {
    constexpr std::size_t kEvents = 16 * 1024;
    std::size_t wrong = 0, early = 0;
    error_code ec;
    for (std::size_t i = 0; i < kEvents && !ec; ++i) {
      // A burst of 1 to 4 events, as a server flushes them; the next only once these are read.
      std::string burst;
      for (std::size_t n = 0; n <= i % 4; ++n) burst += token_event(i);
      auto sent_at = std::chrono::steady_clock::now();
      loopback.send(burst);
      std::string got;
      while (got.size() < burst.size() && !ec) {
        std::string bytes;
        std::tie(ec, bytes) = co_await loopback.read(64 * 1024);
        if (std::chrono::steady_clock::now() < sent_at) ++early;
        got += bytes;
      }
      if (got != burst) ++wrong;
    }
    CHECK_FALSE(ec);
    CHECK(wrong == 0);
    CHECK(early == 0);
  });
}

TEST_CASE("end of stream mid-event and a close under a waiting read end it as async_read_some does",
          "[net][drained]") {
  // Each case twice: through async_read_drained and through async_read_some, the same outcome.
  for (bool drained : {true, false}) {
    CAPTURE(drained);
    auto read = [&](Loopback& loopback, std::string& into) -> asio::awaitable<error_code> {
      into.assign(64, '\0');
      auto [ec, got] = drained
                           ? co_await retrace::net::async_read_drained(loopback.client, asio::buffer(into), kTuple)
                           : co_await loopback.client.async_read_some(asio::buffer(into), kTuple);
      into.resize(got);
      co_return ec;
    };
    SECTION("the peer closes after half an event") {
      Loopback loopback;
      loopback.run([&]() -> asio::awaitable<void> {
        asio::post(loopback.io, [&] {
          loopback.send("data: {\"hal");
          loopback.peer.close();
        });
        std::string first, second;
        auto first_ec = co_await read(loopback, first);
        auto second_ec = co_await read(loopback, second);
        CHECK_FALSE(first_ec);
        CHECK(first == "data: {\"hal");
        CHECK(second_ec == asio::error::eof);
        CHECK(second.empty());
      });
    }
    SECTION("the peer resets the connection after half an event") {
      Loopback loopback;
      loopback.run([&]() -> asio::awaitable<void> {
        asio::post(loopback.io, [&] {
          loopback.send("data: {\"hal");
          loopback.peer.set_option(asio::socket_base::linger(true, 0));
          loopback.peer.close();
        });
        std::string first, second;
        auto first_ec = co_await read(loopback, first);
        auto second_ec = first_ec ? first_ec : co_await read(loopback, second);
        CHECK(first + second == "data: {\"hal");
        CHECK(second_ec == asio::error::connection_reset);
      });
    }
    SECTION("the client closes its socket while a read waits") {
      Loopback loopback;
      loopback.run([&]() -> asio::awaitable<void> {
        asio::post(loopback.io, [&] { loopback.client.close(); });
        std::string bytes;
        auto ec = co_await read(loopback, bytes);
        CHECK(ec == asio::error::operation_aborted);
        CHECK(bytes.empty());
      });
    }
  }
}
