// The recording proxy run for real over loopback (an upstream thread, a client, run_recorder) on
// a ManualClock, so the times it writes to the trace are exact values, not ranges.
#include <catch2/catch.hpp>

#include <filesystem>
#include <future>
#include <sstream>
#include <thread>

#include <unistd.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "base/clock.hpp"
#include "net/url.hpp"
#include "record/record.hpp"

using namespace retrace;
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;

namespace {

std::string chat_event(const std::string& text) {
  return "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,"
         "\"delta\":{\"content\":\"" +
         text + "\"},\"finish_reason\":null}]}\n\n";
}

std::string chunk(const std::string& data) {
  std::ostringstream out;
  out << std::hex << data.size() << "\r\n" << data << "\r\n";
  return out.str();
}

// Answers one request on one connection with `response`, sent in a single write so that the proxy
// reads it whole, then waits for the proxy to close the (pooled) connection.
class OneShotUpstream {
 public:
  explicit OneShotUpstream(std::string response) : response_(std::move(response)) {
    acceptor_.open(tcp::v4());
    acceptor_.bind({asio::ip::make_address("127.0.0.1"), 0});
    acceptor_.listen();
    thread_ = std::thread([this] { serve(); });
  }
  ~OneShotUpstream() {
    if (thread_.joinable()) thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(acceptor_.local_endpoint().port()); }

 private:
  void serve() {
    tcp::socket socket(io_);
    acceptor_.accept(socket);
    beast::flat_buffer buffer;
    http::request<http::string_body> request;
    http::read(socket, buffer, request);
    asio::write(socket, asio::buffer(response_));
    beast::error_code ec;
    char byte;
    asio::read(socket, asio::buffer(&byte, 1), ec);  // until the proxy closes
  }

  std::string response_;
  asio::io_context io_;
  tcp::acceptor acceptor_{io_};
  std::thread thread_;
};

}  // namespace

TEST_CASE("record writes the times it reads from an injected clock - exactly", "[record][clock]") {
  const std::string first = chat_event("Hel"), second = chat_event("lo"), done = "data: [DONE]\n\n";
  OneShotUpstream upstream(
      "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n" +
      chunk(first) + chunk(second) + chunk(done) + "0\r\n\r\n");

  auto dir = std::filesystem::temp_directory_path() /
             ("retrace_record_clock_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  record::RecordOptions options;
  options.upstream = net::parse_url(upstream.url());
  options.out = dir / "clock.rtrace";
  options.threads = 1;
  options.fetch_server_info = false;
  options.max_exchanges = 1;  // the run ends after the one exchange
  options.writer.flush_every = 1;

  // Every read of the clock moves it 1 ms on: the n-th read returns n ms. The reads, in order:
  // the run's start (0), the request read (1), sent upstream (2), the response header (3), the
  // one body read (4: the whole response came in one write), the end (5). The wall clock reads
  // the same count without moving it.
  constexpr std::int64_t kMs = 1'000'000;
  const auto wall_origin = std::chrono::system_clock::time_point{std::chrono::seconds{1'700'000'000}};
  ManualClock clock(std::chrono::milliseconds(1), wall_origin);

  std::promise<std::string> listening;
  std::ostringstream log;
  std::thread recorder([&] {
    record::run_recorder(
        options, [&](const std::string& url) { listening.set_value(url); }, log, clock);
  });
  auto proxy = net::parse_url(listening.get_future().get());

  asio::io_context io;
  tcp::socket client(io);
  client.connect({asio::ip::make_address(proxy.host), proxy.port});
  http::request<http::string_body> request{http::verb::post, "/v1/chat/completions", 11};
  request.set(http::field::host, "proxy");
  request.set(http::field::content_type, "application/json");
  request.body() = R"({"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]})";
  request.prepare_payload();
  http::write(client, request);
  beast::flat_buffer buffer;
  http::response<http::string_body> response;
  http::read(client, buffer, response);
  CHECK(response.result_int() == 200);
  CHECK(response.body() == first + second + done);
  recorder.join();

  auto trace = load_trace(options.out);
  std::filesystem::remove_all(dir);
  CHECK(trace.header.created_unix_ns == 1'700'000'000 * 1'000'000'000LL);
  REQUIRE(trace.exchanges.size() == 1);
  const auto& exchange = trace.exchanges.front();
  CHECK(exchange.intended_send_ns == 1 * kMs);
  CHECK(exchange.actual_send_ns == 2 * kMs);
  CHECK(exchange.start_unix_ns == 1'700'000'000 * 1'000'000'000LL + 3 * kMs);
  CHECK(exchange.first_byte_ns == 1 * kMs);  // 3 - 2
  CHECK(exchange.end_ns == 3 * kMs);         // 5 - 2
  REQUIRE(exchange.response.events.size() == 3);
  for (const auto& event : exchange.response.events) CHECK(event.offset_ns == 2 * kMs);  // 4 - 2
  REQUIRE(exchange.choices.size() == 1);
  REQUIRE(exchange.choices.front().tokens.size() == 2);
  for (const auto& token : exchange.choices.front().tokens) CHECK(token.offset_ns == 2 * kMs);
}

TEST_CASE("a client header value longer than a field holds gets 431 and record goes on", "[record][limits]") {
  const std::string answer = "{\"ok\":true}";
  OneShotUpstream upstream("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
                           std::to_string(answer.size()) + "\r\n\r\n" + answer);
  auto dir = std::filesystem::temp_directory_path() /
             ("retrace_record_field_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  record::RecordOptions options;
  options.upstream = net::parse_url(upstream.url());
  options.out = dir / "field.rtrace";
  options.threads = 1;
  options.fetch_server_info = false;
  options.max_exchanges = 2;
  options.max_header = 1u << 20;  // the whole header may be large; one field still may not
  std::promise<std::string> listening;
  std::ostringstream log;
  std::thread recorder([&] {
    record::run_recorder(
        options, [&](const std::string& url) { listening.set_value(url); }, log, Clock::system());
  });
  auto proxy = net::parse_url(listening.get_future().get());

  asio::io_context io;
  auto ask = [&](const std::string& big_value) {
    tcp::socket client(io);
    client.connect({asio::ip::make_address(proxy.host), proxy.port});
    // Written by hand: Beast's own fields cannot hold such a value.
    std::string request = "GET /v1/models HTTP/1.1\r\nHost: proxy\r\n";
    if (!big_value.empty()) request += "X-Big: " + big_value + "\r\n";
    asio::write(client, asio::buffer(request + "\r\n"));
    beast::flat_buffer buffer;
    http::response<http::string_body> response;
    http::read(client, buffer, response);
    return response;
  };
  auto refused = ask(std::string(70000, 'a'));
  CHECK(refused.result_int() == 431);
  CHECK(refused.body().find("X-Big: its value is 70000 bytes") != std::string::npos);
  CHECK(ask("").result_int() == 200);
  recorder.join();

  auto trace = load_trace(options.out);
  std::filesystem::remove_all(dir);
  REQUIRE(trace.exchanges.size() == 2);
  CHECK(trace.exchanges[0].error.kind == ErrorKind::rejected);
  CHECK(trace.exchanges[1].error.kind == ErrorKind::none);
}
