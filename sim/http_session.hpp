// One HTTP/1.1 connection of `retrace serve`: reads requests with Beast's parser, hands each to
// its owner, and writes the response straight to the socket — whole, or as a chunked SSE stream.
// The Beast examples' session: do_read/on_read, one write in flight, keep-alive.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "net/field_bounded_parser.hpp"
#include "sim/api.hpp"

namespace retrace::sim {

class Session;
using HttpRequest = boost::beast::http::request<boost::beast::http::string_body>;

// What a session needs from the server that owns it (the listener).
class SessionOwner {
 public:
  virtual bool draining() const = 0;
  virtual std::size_t max_body() const = 0;
  // How long a connection may wait without sending a whole request header before it is closed.
  virtual std::chrono::steady_clock::duration idle_timeout() const = 0;
  // Answers `request` now or later through `session` (`self` keeps it alive meanwhile).
  virtual void handle(Session& session, std::shared_ptr<Session> self, HttpRequest& request) = 0;
  // Called by the session's destructor.
  virtual void remove_session(Session* session) = 0;

 protected:
  ~SessionOwner() = default;
};

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(boost::asio::ip::tcp::socket socket, SessionOwner& owner);  // owner must outlive the session
  ~Session();

  void start() { do_read(); }

  // A complete response; the session reads the next request (or closes) once it is written.
  void respond(unsigned status, std::string_view content_type, std::string_view body);
  void respond_error(const ApiError& error) { respond(error.status, "application/json", error_body(error)); }
  ApiError header_error(boost::beast::error_code ec) const;

  // Streaming: begin(), then append SSE bytes to stream_buffer() and flush() as they come, then
  // end_stream(). Bytes are framed as one HTTP chunk per flush.
  void begin_stream();
  std::string& stream_buffer() { return sse_; }
  void flush();
  void end_stream();

  // The client is gone (a write failed) or the server closed the connection.
  bool gone() const { return closed_; }
  // On shutdown: close now if between requests; otherwise after the current response.
  void close_if_idle();
  void close();

 private:
  void do_read();
  void on_header(boost::beast::error_code ec);
  void read_body();
  void on_read(boost::beast::error_code ec);
  void start_write();
  void frame_pending_sse();

  boost::asio::ip::tcp::socket socket_;
  SessionOwner& owner_;
  boost::asio::steady_timer idle_timer_;  // armed while waiting for a request header
  boost::beast::flat_buffer read_buffer_;
  // Bounded: a field Beast cannot hold (a header's, or a chunked body's trailer's, over 65,533
  // bytes) fails the read, answered 431, instead of throwing out of the read's handler.
  std::optional<net::BoundedRequestParser<boost::beast::http::string_body>> parser_;
  std::string sse_;        // SSE bytes not yet framed
  std::string outbox_;     // framed bytes not yet handed to the socket
  std::string writing_;    // bytes in flight; must outlive the write
  bool reading_ = false;   // waiting for a request (idle)
  bool writing_active_ = false;
  bool response_done_ = false;  // the last byte of the current response is in outbox_/writing_
  bool keep_alive_ = true;
  bool head_ = false;  // the current request is HEAD: its response has a header and no body
  bool closed_ = false;
};

}  // namespace retrace::sim
