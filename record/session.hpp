// Internal to record/: one client connection of the recording proxy, in the style of Beast's
// advanced server (do_x starts an operation, on_x completes it) and its relay() example (a
// buffer_body parser and serializer: each piece of the upstream's body goes to the client as soon
// as it is read).
//
// Per request:
//   read request ─► upstream from pool (or connect) ─► write request ─► read response header
//     ─► write header to client ─► { read body piece ─► write piece ─► record (offset, bytes) } ─► done
// A reused pooled connection that fails before any response byte is retried once on a fresh one
// (the upstream may have closed it while idle). Everything runs on the worker's single thread.
//
// The steps live in two files along the one seam of the exchange, the response header:
//   session.cpp  the request side (read, Expect, the upstream write and its retry), the answers
//                record gives itself (502/504, and 400/413/431 to what it rejects), and complete()
//                where every exchange that began ends, exactly once;
//   relay.cpp    the response body: start_relay … settle, back-pressure, the watchdog.
#pragma once

#include <array>
#include <memory>
#include <optional>
#include <string>

#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "net/drained_read.hpp"
#include "net/field_bounded_parser.hpp"
#include "record/proxy.hpp"

namespace retrace::record {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using net::tcp;

class ClientSession : public std::enable_shared_from_this<ClientSession> {
 public:
  ClientSession(Worker& worker, tcp::socket socket, std::uint64_t id);
  ~ClientSession();

  void start();
  // Draining: close a connection that waits for its next request.
  void close_if_idle() {
    if (!in_flight_) close_client();
  }
  // Shutdown deadline: the exchange in flight, if any, completes as cut.
  void cut();

 private:
  using error_code = net::error_code;
  // The watchdog's own time: it decides when to give up waiting, so it reads the clock its timer
  // runs on, not the injected Clock, which times only what the trace records.
  using WaitClock = asio::steady_timer::clock_type;

  // ---- the request side, the proxy's own answers, completion (session.cpp)
  void do_read_request();
  void on_read_request_header(error_code ec);
  void do_read_request_body();
  void on_read_request(error_code ec);
  void begin_capture(const http::request<http::string_body>& request, bool forwarded);
  void begin_exchange();
  void acquire_upstream();
  void on_connect(error_code ec, net::Phase phase);
  void do_write_upstream();
  bool retry_on_fresh_connection(error_code ec);
  void on_write_upstream(error_code ec);
  void do_read_header();
  void on_read_header(error_code ec);
  void fail_before_response(error_code ec, net::Phase phase, const std::string& detail = {});
  void reject(http::status status, const std::string& message);
  // The 400's message for a request whose body the client stopped sending (its side closed).
  std::string body_cut_short() const;
  void complete(bool close_after);
  void hand_over();  // the captured exchange to the trace thread (recorded paths only)
  void close_client();
  std::int64_t ns_since(Clock::time_point from) const;  // from `from` to the clock's now
  std::int64_t wall_ns() const;                         // the clock's calendar time

  // ---- the response body (relay.cpp)
  void start_relay();
  void reserve_capture();
  void do_read_body();
  void on_read_body(error_code ec);
  void parse_buffered();
  void send_body(std::string_view bytes);
  void flush_client();
  void on_write_client(error_code ec);
  void settle();
  void arm_watchdog(WaitClock::duration after);
  void on_watchdog();
  void finish_response();
  void abort_stream();
  void client_gone(error_code ec);
  void finish_cut();
  void finish_past_limit();

  Worker& worker_;
  ProxyShared& shared_;
  const RecordOptions& options_;
  const Clock& clock_;
  beast::tcp_stream client_;
  std::uint64_t id_;
  beast::flat_buffer client_buffer_;
  std::optional<net::BoundedRequestParser<http::string_body>> request_parser_;
  http::request<http::string_body> upstream_request_;
  http::response<http::string_body> proxy_response_;  // must outlive its write
  std::unique_ptr<net::UpstreamConnection> upstream_;
  std::optional<net::BoundedResponseParser<http::buffer_body>> response_parser_;
  std::array<char, net::UpstreamConnection::kReadRoomBytes> read_buf_{};
  net::DrainedReadStream<beast::tcp_stream::socket_type> upstream_reader_;  // must outlive its read
  std::string out_pending_;  // relayed bytes not yet handed to a client write
  std::string out_writing_;  // the client write in flight (must outlive it)
  asio::steady_timer watchdog_{client_.get_executor()};
  std::uint64_t relay_generation_ = 0;  // a watchdog firing for an earlier response is ignored
  WaitClock::time_point read_since_{};
  WaitClock::time_point write_since_{};
  error_code client_error_;
  error_code write_error_;  // the upstream write failed; a response may still be there to read
  CapturedExchange capture_;
  Clock::time_point received_at_{};
  Clock::time_point sent_at_{};
  error_code upstream_error_;
  bool sent_ = false;
  bool in_flight_ = false;
  bool recording_ = false;
  std::atomic<std::uint64_t>* not_recorded_ = nullptr;  // why, when the exchange is not recorded
  bool reused_ = false;
  bool retried_ = false;
  bool cut_ = false;
  bool head_request_ = false;
  bool client_keep_alive_ = false;
  bool upstream_keep_alive_ = false;
  bool relay_active_ = false;
  bool reading_ = false;
  bool writing_ = false;
  bool frame_chunked_ = false;
  bool upstream_done_ = false;
  bool client_failed_ = false;
  bool upstream_stalled_ = false;
  bool client_stalled_ = false;
  bool past_limit_ = false;  // the recorded body reached --max-response-bytes (net::append_within)
};

}  // namespace retrace::record
