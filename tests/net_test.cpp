#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <cstdint>
#include <csignal>
#include <functional>
#include <future>
#include <optional>
#include <stdexcept>
#include <thread>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/http/error.hpp>

#include "net/connection.hpp"
#include "net/errors.hpp"
#include "base/stop_signals.hpp"
#include "net/http_rules.hpp"
#include "net/url.hpp"

using namespace retrace;
using namespace retrace::net;
namespace http = boost::beast::http;

TEST_CASE("hop-by-hop fields are the fixed ones plus those the Connection header names", "[net]") {
  net::HopByHop plain;
  for (auto name : {"Connection", "keep-alive", "TE", "Transfer-Encoding", "Upgrade", "Trailer",
                    "Proxy-Connection", "Host", "Content-Length", "Expect"})
    CHECK(plain(name));
  for (auto name : {"Content-Type", "Authorization", "X-Trace", "Accept-Encoding"})
    CHECK_FALSE(plain(name));
  net::HopByHop named(" close ,X-Trace,, x-debug ");
  CHECK(named("x-trace"));
  CHECK(named("X-Debug"));
  CHECK(named("close"));
  CHECK_FALSE(named("X-Tracer"));
  CHECK_FALSE(named("Content-Type"));
}

TEST_CASE("a URL without a port gets the scheme's default port", "[net][url]") {
  CHECK(parse_url("http://example.com").port == 80);
  CHECK(parse_url("https://example.com").port == 443);
  CHECK(parse_url("HTTPS://example.com").scheme == "https");
  CHECK(parse_url("http://example.com").host_header() == "example.com");
  CHECK(parse_url("http://example.com:8080").host_header() == "example.com:8080");
}

TEST_CASE("an IPv6 literal URL keeps its brackets out of the host and in the Host header",
          "[net][url]") {
  auto url = parse_url("http://[::1]:8000/v1/");
  CHECK(url.host == "::1");
  CHECK(url.port == 8000);
  CHECK(url.base_path == "/v1");
  CHECK(url.host_header() == "[::1]:8000");
  CHECK(url.str() == "http://[::1]:8000/v1");
}

TEST_CASE("a base path loses its trailing slashes and is prefixed on join", "[net][url]") {
  auto url = parse_url("http://h:1/api//");
  CHECK(url.base_path == "/api");
  CHECK(url.join("/v1/models") == "/api/v1/models");
  CHECK(url.join("v1") == "/api/v1");
  CHECK(parse_url("http://h:1").join("/x?y=1") == "/x?y=1");
}

TEST_CASE("bad URLs are refused with a message that says what to try", "[net][url]") {
  CHECK_THROWS_WITH(parse_url("localhost:8000"), Catch::Contains("try http://localhost:8000"));
  CHECK_THROWS_WITH(parse_url("http//bad"), Catch::EndsWith("try http://bad"));
  CHECK_THROWS_WITH(parse_url("https:/h:1"), Catch::EndsWith("try https://h:1"));
  CHECK_THROWS_WITH(parse_url("ftp://h"), Catch::Contains("use http:// or https://"));
  CHECK_THROWS_WITH(parse_url("http://h:99999"), Catch::Contains("bad port"));
  CHECK_THROWS_WITH(parse_url("http://h:"), Catch::Contains("bad port"));
  CHECK_THROWS_WITH(parse_url("http://:80"), Catch::Contains("missing host"));
  CHECK_THROWS_WITH(parse_url("http://u:p@h"), Catch::Contains("credentials"));
  CHECK_THROWS_WITH(parse_url("http://h/x?q=1"), Catch::Contains("query"));
  CHECK_THROWS_WITH(parse_url("http://[::1"), Catch::Contains("unclosed"));
}

TEST_CASE("a listen address defaults its host to loopback and requires a port", "[net][url]") {
  auto any = parse_listen(":0");
  CHECK(any.host == "127.0.0.1");
  CHECK(any.port == 0);
  auto v6 = parse_listen("[::1]:9000");
  CHECK(v6.host == "::1");
  CHECK(v6.port == 9000);
  CHECK_THROWS_WITH(parse_listen("127.0.0.1"), Catch::Contains("HOST:PORT"));
  CHECK_THROWS(parse_listen("127.0.0.1:x"));
}

TEST_CASE("errors are classified by code and by the phase they happened in", "[net][errors]") {
  namespace aerr = boost::asio::error;
  CHECK(classify({}, Phase::read_body) == ErrorKind::none);
  CHECK(classify(aerr::connection_refused, Phase::connect) == ErrorKind::connect);
  CHECK(classify(aerr::host_not_found, Phase::resolve) == ErrorKind::connect);
  CHECK(classify(boost::beast::error::timeout, Phase::connect) == ErrorKind::timeout);
  CHECK(classify(boost::beast::error::timeout, Phase::read_header) == ErrorKind::timeout);
  CHECK(classify(aerr::eof, Phase::tls_handshake) == ErrorKind::tls);
  CHECK(classify(aerr::connection_reset, Phase::read_body) == ErrorKind::reset);
  CHECK(classify(http::error::partial_message, Phase::read_body) == ErrorKind::reset);
  CHECK(classify(http::error::end_of_stream, Phase::read_header) == ErrorKind::reset);
  CHECK(classify(boost::asio::ssl::error::stream_truncated, Phase::read_body) == ErrorKind::reset);
  CHECK(classify(http::error::bad_version, Phase::read_header) == ErrorKind::protocol);
  CHECK(classify(http::error::bad_chunk, Phase::read_body) == ErrorKind::protocol);
  CHECK(classify(aerr::operation_aborted, Phase::read_body) == ErrorKind::cut);
  CHECK_THAT(describe(http::error::partial_message, Phase::read_body, "http://h:1"),
             Catch::Contains("middle of the response") && Catch::Contains("http://h:1"));
}

TEST_CASE("a TLS context refuses a missing CA file and accepts --insecure", "[net][tls]") {
  CHECK_THROWS_WITH(make_client_tls_context({"/nonexistent/ca.pem", false}),
                    Catch::Contains("--ca-file"));
  CHECK(make_client_tls_context({"", true}) != nullptr);
  CHECK(make_client_tls_context({}) != nullptr);
}

namespace {
// A loopback port with nothing listening on it.
std::uint16_t closed_port(boost::asio::io_context& io) {
  tcp::acceptor acceptor(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  return acceptor.local_endpoint().port();
}

struct ConnectResult {
  error_code ec;
  Phase phase = Phase::resolve;
};

ConnectResult connect_and_wait(boost::asio::io_context& io, UpstreamConnection& connection) {
  std::optional<ConnectResult> result;
  connection.async_connect(std::chrono::seconds(5),
                           [&](error_code ec, Phase phase) { result = ConnectResult{ec, phase}; });
  io.run();
  io.restart();
  REQUIRE(result);
  return *result;
}
}  // namespace

TEST_CASE("connecting to a closed port is a connect error", "[net][connection]") {
  boost::asio::io_context io;
  auto url = parse_url("http://127.0.0.1:" + std::to_string(closed_port(io)));
  UpstreamConnection connection(io.get_executor(), url, nullptr);
  auto result = connect_and_wait(io, connection);
  CHECK(result.ec);
  CHECK(classify(result.ec, result.phase) == ErrorKind::connect);
}

TEST_CASE("a TLS handshake with a server that is not TLS is a tls error", "[net][connection]") {
  boost::asio::io_context io;
  tcp::acceptor acceptor(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  tcp::socket peer(io);
  // The "server" accepts, answers the ClientHello with plain HTTP, and closes.
  acceptor.async_accept(peer, [&](error_code ec) {
    if (ec) return;
    static const char reply[] = "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n";
    error_code ignored;
    peer.write_some(asio::buffer(reply, sizeof reply - 1), ignored);
    peer.close();
  });
  auto url = parse_url("https://127.0.0.1:" + std::to_string(acceptor.local_endpoint().port()));
  UpstreamConnection connection(io.get_executor(), url, make_client_tls_context({"", true}));
  auto result = connect_and_wait(io, connection);
  CHECK(result.ec);
  CHECK(result.phase == Phase::tls_handshake);
  CHECK(classify(result.ec, result.phase) == ErrorKind::tls);
}

// A loopback listener that accepts every connection (its sockets kept in `peers`, last one
// first), and connect() for a connected client to it.
struct LoopbackUpstream {
  boost::asio::io_context io;
  tcp::acceptor acceptor{io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)};
  std::deque<tcp::socket> peers;
  Url url = parse_url("http://127.0.0.1:" + std::to_string(acceptor.local_endpoint().port()));

  std::unique_ptr<UpstreamConnection> connect() {
    peers.emplace_front(io);
    acceptor.async_accept(peers.front(), [](error_code) {});
    auto connection = std::make_unique<UpstreamConnection>(io.get_executor(), url, nullptr);
    auto result = connect_and_wait(io, *connection);
    REQUIRE_FALSE(result.ec);
    return connection;
  }
};

TEST_CASE("the pool hands back an idle connection to the same upstream only", "[net][pool]") {
  LoopbackUpstream upstream;
  auto connection = upstream.connect();
  auto* raw = connection.get();

  ConnectionPool pool(Clock::system());
  pool.put(std::move(connection));
  CHECK(pool.idle() == 1);
  CHECK(pool.take(parse_url("http://127.0.0.1:1")) == nullptr);
  auto again = pool.take(upstream.url);
  CHECK(again.get() == raw);
  CHECK(pool.idle() == 0);

  // A closed connection is not pooled.
  again->close();
  pool.put(std::move(again));
  CHECK(pool.idle() == 0);
}

TEST_CASE("the pool drops connections idle longer than its limit", "[net][pool]") {
  LoopbackUpstream upstream;
  ManualClock clock;
  ConnectionPool pool(clock, 8, std::chrono::seconds(30));
  pool.put(upstream.connect());
  clock.advance(std::chrono::seconds(29));
  auto connection = pool.take(upstream.url);
  REQUIRE(connection != nullptr);  // idle 29 s of 30: still reused
  pool.put(std::move(connection));
  clock.advance(std::chrono::seconds(30));
  CHECK(pool.take(upstream.url) == nullptr);  // idle 30 s since it came back: dropped
  CHECK(pool.idle() == 0);
}

TEST_CASE("a connection the upstream closed is not handed out again", "[net][pool]") {
  LoopbackUpstream upstream;
  auto connection = upstream.connect();
  CHECK(connection->idle_clean());
  // As llama.cpp's server does after a streamed response: close, without Connection: close.
  upstream.peers.front().shutdown(tcp::socket::shutdown_send);
  // The FIN is in the client's socket once a blocking read there returns end of stream.
  char byte;
  error_code ec;
  connection->tcp_layer().socket().receive(asio::buffer(&byte, 1), tcp::socket::message_peek, ec);
  REQUIRE(ec == asio::error::eof);
  CHECK_FALSE(connection->idle_clean());
  ConnectionPool pool(Clock::system());
  pool.put(std::move(connection));
  CHECK(pool.take(upstream.url) == nullptr);
  CHECK(pool.idle() == 0);
}

TEST_CASE("a Keep-Alive header gives the idle timeout and the request limit", "[net][keep-alive]") {
  auto limits = parse_keep_alive("timeout=5, max=100");
  REQUIRE(limits.timeout);
  CHECK(*limits.timeout == std::chrono::seconds(5));
  REQUIRE(limits.max);
  CHECK(*limits.max == 100);
  CHECK(parse_keep_alive("Max = \"7\" ,foo=bar").max == std::optional<std::uint64_t>(7));
  CHECK_FALSE(parse_keep_alive("timeout=soon").timeout);
  CHECK_FALSE(parse_keep_alive("timeout=-1").timeout);
  CHECK_FALSE(parse_keep_alive("").max);
}

TEST_CASE("the pool honours the upstream's keep-alive timeout and request limit", "[net][pool][keep-alive]") {
  LoopbackUpstream upstream;
  auto connection = upstream.connect();
  connection->honour_keep_alive("timeout=5, max=2");
  CHECK(connection->idle_limit == std::chrono::seconds(4));  // a second short of the server's
  connection->honour_keep_alive("timeout=1");
  CHECK(connection->idle_limit == std::chrono::milliseconds(500));
  CHECK(connection->max_responses == 2);

  ConnectionPool pool(Clock::system());
  connection->responses = 1;
  connection->honour_keep_alive("timeout=0");  // the server keeps no idle connection
  pool.put(std::move(connection));
  CHECK(pool.take(upstream.url) == nullptr);

  auto second = upstream.connect();
  second->honour_keep_alive("max=2");
  second->responses = 2;  // the server's last
  pool.put(std::move(second));
  CHECK(pool.idle() == 0);
}

namespace {

// Runs `child` in a forked process (signals sent there cannot disturb the test runner) and
// returns its wait status. alarm() ends a child that hangs, so a lost signal fails the test.
int in_child_process(const std::function<int()>& child) {
  pid_t pid = ::fork();
  if (pid == 0) {
    ::alarm(20);
    int code = 99;
    try {
      code = child();
    } catch (...) {
    }
    ::_exit(code);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

}  // namespace

TEST_CASE("each stop signal reaches the callback and the process lives on", "[net][signals]") {
  int status = in_child_process([] {
    std::promise<void> second;
    int seen = 0;
    net::StopSignals signals([&](int number) {
      if (number != SIGINT && number != SIGTERM) return;
      if (++seen == 2) second.set_value();
    });
    ::kill(::getpid(), SIGINT);
    ::kill(::getpid(), SIGTERM);
    second.get_future().wait();
    return 7;
  });
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 7);
}

TEST_CASE("after quit_on_next the next stop signal ends the process at once", "[net][signals]") {
  int status = in_child_process([] {
    std::promise<void> first;
    net::StopSignals signals([&](int) { first.set_value(); });
    ::kill(::getpid(), SIGTERM);
    first.get_future().wait();
    signals.quit_on_next();
    ::kill(::getpid(), SIGTERM);  // the default action: the process ends here
    return 7;
  });
  REQUIRE(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGTERM);
}

TEST_CASE("a stop signal ignored by the parent shell still reaches the callback", "[net][signals]") {
  int status = in_child_process([] {
    std::signal(SIGINT, SIG_IGN);  // what a non-interactive shell does for a background job
    std::promise<void> heard;
    net::StopSignals signals([&](int number) {
      if (number == SIGINT) heard.set_value();
    });
    ::kill(::getpid(), SIGINT);
    heard.get_future().wait();
    return 7;
  });
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 7);
}

TEST_CASE("the first stop signal sets the flag and the second exits 130", "[net][signals]") {
  int status = in_child_process([] {
    std::atomic<bool> stop{false};
    net::StopOnSignals signals(stop);
    ::kill(::getpid(), SIGINT);
    while (!stop.load()) std::this_thread::yield();
    ::kill(::getpid(), SIGTERM);  // the watcher exits 130 while this thread waits
    while (true) std::this_thread::yield();
    return 7;
  });
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 130);
}

TEST_CASE("URLs that could break a request line or a Host header are refused by RFC 3986") {
  using retrace::net::parse_url;
  CHECK_THROWS_WITH(parse_url("http://h/a b"), Catch::Contains("malformed URL"));
  CHECK_THROWS_WITH(parse_url("http://h/a\r\nHost: evil"), Catch::Contains("'http://h/a\\r\\nHost: evil'"));
  CHECK_THROWS_WITH(parse_url("http://ho st:80"), Catch::Contains("malformed URL"));
  CHECK_THROWS_WITH(parse_url("http://[::zz]:80"), Catch::Contains("malformed URL"));
  CHECK_THROWS_WITH(parse_url("http://h/%zz"), Catch::Contains("malformed URL"));
  CHECK(parse_url("http://h/a%20b/").base_path == "/a%20b");
  // Found by fuzz_url: Boost.URL 1.81 takes "9/:x/" as the path after "[::0]"; str() then read
  // "http://[::0]:809/:x".
  CHECK_THROWS_WITH(parse_url("http://[::0]9/:x/"), Catch::Contains("must start with '/'"));
  CHECK(parse_url("http://[::1]:8000/v1/").host == "::1");
}
