// Unit tests of whole runs in process: a request that cannot be sent, and runs on a clock that
// does not move, against a port where nothing listens and an in-process server that answers.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <atomic>
#include <filesystem>
#include <thread>

#include "format/json.hpp"
#include "replay/preflight.hpp"
#include "replay/replay.hpp"
#include "tests/replay_exchanges.hpp"

using namespace retrace;
using namespace retrace::replay;

TEST_CASE("an exchange whose request cannot be sent is recorded as a protocol error and the run goes on") {
  // Beast refuses a header value over 64 KiB by throwing while the request is built; the other
  // two exchanges go to a loopback port where nothing listens.
  std::uint16_t port = 0;
  {
    boost::asio::io_context io;
    boost::asio::ip::tcp::acceptor acceptor(
        io, {boost::asio::ip::make_address("127.0.0.1"), 0});
    port = acceptor.local_endpoint().port();
  }
  LoadedTrace input;
  for (std::uint64_t id = 0; id < 3; ++id) {
    auto exchange = exchange_at(id, "/v1/completions");
    exchange.request.body = R"({"prompt":"hi","max_tokens":1})";
    input.exchanges.push_back(exchange);
  }
  input.exchanges[1].request.headers.push_back({"X-Large", std::string(70'000, 'a')});
  Options options;
  options.target = "http://127.0.0.1:" + std::to_string(port);
  options.threads = 1;
  // The preflight would stop at the dead port (as it should: tests/e2e/replay_preflight.sh); the
  // workers' own error recording is what this test is about.
  auto checked = std::make_shared<Preflight>();
  checked->url = net::parse_url(options.target);
  options.preflight = checked;
  auto dir = std::filesystem::temp_directory_path() /
             ("retrace-replay-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto out = dir / "run.rtrace";

  auto result = run_replay(input, options, out);

  auto written = load_trace(out);
  std::filesystem::remove_all(dir);
  REQUIRE(written.exchanges.size() == 3);
  CHECK(result.stats.exchanges == 3);
  for (const auto& exchange : written.exchanges) {
    REQUIRE(exchange.source_id);
    INFO("source " << *exchange.source_id << ": " << exchange.error.message);
    if (*exchange.source_id == 1) {
      CHECK(exchange.error.kind == ErrorKind::protocol);
      CHECK(exchange.error.message.find("field value too large") != std::string::npos);
    } else {
      CHECK(exchange.error.kind == ErrorKind::connect);
    }
  }
}

TEST_CASE("a run on a clock that does not move records every send at its exact instant") {
  // Replay measures on Options::clock: on a ManualClock that stands still, every intended and
  // actual send is at offset 0 and starts at the clock's wall time, exactly (a loopback port
  // where nothing listens: the exchanges fail to connect, their times are still recorded).
  std::uint16_t port = 0;
  {
    boost::asio::io_context io;
    boost::asio::ip::tcp::acceptor acceptor(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
    port = acceptor.local_endpoint().port();
  }
  LoadedTrace input;
  for (std::uint64_t id = 0; id < 4; ++id) input.exchanges.push_back(exchange_at(id, "/v1/completions"));
  const std::int64_t origin_ns = 1'767'225'600'000'000'000;  // 2026-01-01T00:00:00Z
  ManualClock clock(std::chrono::nanoseconds{0},
                    Clock::wall_time_point{std::chrono::duration_cast<Clock::wall_time_point::duration>(
                        std::chrono::nanoseconds{origin_ns})});
  Options options;
  options.target = "http://127.0.0.1:" + std::to_string(port);
  options.threads = 1;
  options.clock = &clock;
  auto checked = std::make_shared<Preflight>();
  checked->url = net::parse_url(options.target);
  options.preflight = checked;
  auto dir = std::filesystem::temp_directory_path() /
             ("retrace-replay-clock-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);

  run_replay(input, options, dir / "run.rtrace");

  auto written = load_trace(dir / "run.rtrace");
  std::filesystem::remove_all(dir);
  REQUIRE(written.exchanges.size() == 4);
  for (const auto& exchange : written.exchanges) {
    CHECK(exchange.error.kind == ErrorKind::connect);
    CHECK(exchange.intended_send_ns == 0);
    CHECK(exchange.actual_send_ns == 0);
    CHECK(exchange.start_unix_ns == origin_ns);
  }
}

namespace {

// An in-process HTTP server on a loopback port, on its own thread: every request gets `answer`
// as a JSON 200 (keep-alive), on as many connections as the client opens; it counts those to
// /v1/completions (a run also scrapes /metrics). Stops when destroyed.
class AnsweringServer {
 public:
  explicit AnsweringServer(std::string answer) : answer_(std::move(answer)) {
    accept();
    thread_ = std::thread([this] { io_.run(); });
  }
  ~AnsweringServer() {
    io_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(acceptor_.local_endpoint().port()); }
  std::size_t completions() const { return completions_; }

 private:
  struct Session {
    boost::asio::ip::tcp::socket socket;
    boost::beast::flat_buffer buffer;
    boost::beast::http::request<boost::beast::http::string_body> request;
    boost::beast::http::response<boost::beast::http::string_body> response;
  };
  void accept() {
    acceptor_.async_accept([this](boost::system::error_code ec, boost::asio::ip::tcp::socket socket) {
      if (ec) return;
      read(std::make_shared<Session>(Session{std::move(socket), {}, {}, {}}));
      accept();
    });
  }
  void read(std::shared_ptr<Session> session) {
    session->request = {};
    boost::beast::http::async_read(session->socket, session->buffer, session->request,
                                   [this, session](boost::system::error_code ec, std::size_t) {
                                     if (ec) return;  // the client closed the connection
                                     write(session);
                                   });
  }
  void write(std::shared_ptr<Session> session) {
    session->response = {boost::beast::http::status::ok, 11};
    session->response.set(boost::beast::http::field::content_type, "application/json");
    session->response.body() = answer_;
    session->response.keep_alive(true);
    session->response.prepare_payload();
    boost::beast::http::async_write(session->socket, session->response,
                                    [this, session](boost::system::error_code ec, std::size_t) {
                                      if (ec) return;
                                      if (session->request.target() == "/v1/completions") ++completions_;
                                      read(session);
                                    });
  }

  std::string answer_;
  boost::asio::io_context io_;
  boost::asio::ip::tcp::acceptor acceptor_{io_, {boost::asio::ip::make_address("127.0.0.1"), 0}};
  std::atomic<std::size_t> completions_{0};
  std::thread thread_;
};

}  // namespace

TEST_CASE("a run on a clock that does not move records a served exchange at its exact instants") {
  // The same stopped clock against a server that answers: the answer is decoded and kept, and
  // every time the run measured (send, first byte, end) is the clock's, exactly.
  AnsweringServer server(
      R"({"id":"c1","object":"text_completion","model":"m","choices":[{"index":0,"text":"hello",)"
      R"("finish_reason":"stop"}],"usage":{"prompt_tokens":2,"completion_tokens":1,"total_tokens":3}})");
  LoadedTrace input;
  for (std::uint64_t id = 0; id < 3; ++id) {
    input.exchanges.push_back(exchange_at(id, "/v1/completions"));
    input.exchanges.back().request.body = R"({"model":"m","prompt":"hi","max_tokens":1})";
  }
  const std::int64_t origin_ns = 1'767'225'600'000'000'000;  // 2026-01-01T00:00:00Z
  ManualClock clock(std::chrono::nanoseconds{0},
                    Clock::wall_time_point{std::chrono::duration_cast<Clock::wall_time_point::duration>(
                        std::chrono::nanoseconds{origin_ns})});
  Options options;
  options.target = server.url();
  options.threads = 1;
  options.stream = false;
  options.clock = &clock;
  auto checked = std::make_shared<Preflight>();
  checked->url = net::parse_url(options.target);
  options.preflight = checked;
  auto dir = std::filesystem::temp_directory_path() /
             ("retrace-replay-served-clock-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);

  run_replay(input, options, dir / "run.rtrace");

  auto written = load_trace(dir / "run.rtrace");
  std::filesystem::remove_all(dir);
  CHECK(server.completions() == 3);
  REQUIRE(written.exchanges.size() == 3);
  for (const auto& exchange : written.exchanges) {
    CHECK(exchange.error.kind == ErrorKind::none);
    CHECK(exchange.response.status == 200);
    REQUIRE(exchange.choices.size() == 1);
    CHECK(output_text(exchange.choices.front()) == "hello");
    CHECK(exchange.usage.completion_tokens == 1);
    CHECK(exchange.intended_send_ns == 0);
    CHECK(exchange.actual_send_ns == 0);
    CHECK(exchange.first_byte_ns == 0);
    CHECK(exchange.end_ns == 0);
    CHECK(exchange.start_unix_ns == origin_ns);
  }
}
