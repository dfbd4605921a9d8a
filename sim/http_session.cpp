#include "sim/http_session.hpp"

#include <charconv>

#include <boost/asio/write.hpp>

#include "sim/json_out.hpp"

namespace retrace::sim {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

Session::Session(tcp::socket socket, SessionOwner& owner)
    : socket_(std::move(socket)), owner_(owner), idle_timer_(socket_.get_executor()) {}

Session::~Session() { owner_.remove_session(this); }

void Session::close() {
  if (closed_) return;
  closed_ = true;
  idle_timer_.cancel();
  boost::system::error_code ignored;
  socket_.shutdown(tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
}

void Session::close_if_idle() {
  if (reading_) close();
}

void Session::do_read() {
  if (closed_) return;
  if (owner_.draining()) return close();
  parser_.emplace();
  parser_->body_limit(owner_.max_body());
  head_ = false;
  reading_ = true;
  idle_timer_.expires_after(owner_.idle_timeout());
  idle_timer_.async_wait([weak = weak_from_this()](beast::error_code ec) {
    auto self = weak.lock();
    if (!ec && self && self->reading_) self->close();
  });
  http::async_read_header(socket_, read_buffer_, *parser_,
                          [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_header(ec); });
}

// A request the parser refused: 431 when its header (or trailer) is too large, a field of it or
// the whole (Beast's limit, 8 KiB by default), as servers answer; else 400.
ApiError Session::header_error(beast::error_code ec) const {
  if (ec == http::error::header_limit)
    return {431,
            "request " + (parser_->oversized().empty() ? std::string("header is over the limit of 8192 bytes")
                                                        : parser_->oversized()),
            {}, "request_header_too_large"};
  return {400, "malformed HTTP request: " + ec.message(), {}, {}};
}

void Session::on_header(beast::error_code ec) {
  idle_timer_.cancel();
  if (ec == http::error::body_limit) return on_read(ec);  // Content-Length over the limit
  if (ec) {
    reading_ = false;
    if (ec == http::error::end_of_stream || ec == asio::error::operation_aborted || ec == asio::error::eof ||
        ec == asio::error::connection_reset || closed_)
      return close();
    keep_alive_ = false;
    return respond_error(header_error(ec));
  }
  reading_ = false;  // a request has begun: no longer idle
  auto length = parser_->content_length();
  if (length && *length > owner_.max_body()) {
    keep_alive_ = false;
    return respond_error({413,
                          "request body of " + std::to_string(*length) + " bytes is over the limit of " +
                              std::to_string(owner_.max_body()) + " bytes (--max-body)",
                          {}, "request_too_large"});
  }
  if (beast::iequals(parser_->get()[http::field::expect], "100-continue")) {
    // curl and others wait (a second, for curl) for this before sending a body.
    static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
    asio::async_write(socket_, asio::buffer(kContinue.data(), kContinue.size()),
                      [self = shared_from_this()](beast::error_code ec, std::size_t) {
                        if (ec) return self->close();
                        self->read_body();
                      });
    return;
  }
  read_body();
}

void Session::read_body() {
  http::async_read(socket_, read_buffer_, *parser_,
                   [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_read(ec); });
}

void Session::on_read(beast::error_code ec) {
  if (ec == http::error::body_limit) {
    keep_alive_ = false;
    return respond_error({413,
                          "request body is over the limit of " + std::to_string(owner_.max_body()) +
                              " bytes (--max-body)",
                          {}, "request_too_large"});
  }
  if (ec) {
    if (ec == asio::error::operation_aborted || closed_) return close();
    keep_alive_ = false;
    return respond_error(header_error(ec));
  }
  HttpRequest request = parser_->release();
  keep_alive_ = request.keep_alive();
  head_ = request.method() == http::verb::head;
  response_done_ = false;
  owner_.handle(*this, shared_from_this(), request);
}

void Session::respond(unsigned status, std::string_view content_type, std::string_view body) {
  outbox_ += "HTTP/1.1 ";
  put_number(outbox_, status);
  outbox_ += ' ';
  outbox_ += http::obsolete_reason(http::int_to_status(status));
  outbox_ += "\r\ncontent-type: ";
  outbox_ += content_type;
  outbox_ += "\r\ncontent-length: ";
  put_number(outbox_, body.size());
  outbox_ += "\r\nserver: retrace-sim\r\n";
  if (!keep_alive_ || owner_.draining()) outbox_ += "connection: close\r\n";
  outbox_ += "\r\n";
  // A response to HEAD carries the length a GET would get, and no body (RFC 9110 9.3.2): bytes
  // after the header would be read as the next response by a client that reuses the connection.
  if (!head_) outbox_ += body;
  response_done_ = true;
  start_write();
}

void Session::begin_stream() {
  outbox_ +=
      "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\n"
      "transfer-encoding: chunked\r\ncache-control: no-cache\r\nserver: retrace-sim\r\n";
  if (!keep_alive_) outbox_ += "connection: close\r\n";
  outbox_ += "\r\n";
  start_write();
}

void Session::frame_pending_sse() {
  if (sse_.empty()) return;
  char digits[16];
  auto result = std::to_chars(digits, digits + sizeof digits, sse_.size(), 16);
  outbox_.append(digits, result.ptr);
  outbox_ += "\r\n";
  outbox_ += sse_;
  outbox_ += "\r\n";
  sse_.clear();
}

void Session::flush() {
  frame_pending_sse();
  start_write();
}

void Session::end_stream() {
  frame_pending_sse();
  outbox_ += "0\r\n\r\n";
  response_done_ = true;
  start_write();
}

void Session::start_write() {
  if (writing_active_ || closed_) return;
  if (outbox_.empty()) {
    if (response_done_) {
      response_done_ = false;
      if (keep_alive_) do_read();
      else close();
    }
    return;
  }
  std::swap(writing_, outbox_);
  outbox_.clear();
  writing_active_ = true;
  asio::async_write(socket_, asio::buffer(writing_),
                    [self = shared_from_this()](beast::error_code ec, std::size_t) {
                      self->writing_active_ = false;
                      self->writing_.clear();
                      if (ec) return self->close();
                      self->start_write();  // what arrived meanwhile, or the next request
                    });
}

}  // namespace retrace::sim
