// A client connection's response body: the relay from the upstream to the client and how it ends.
// See session.hpp for the steps and which file holds which.
//
// The upstream read and the client write run at the same time: while one write is on its way to
// the client the next upstream read is already waiting, and whatever arrives meanwhile goes out
// in the next single write (coalesced, never held back). With no write in flight, a read's bytes
// go out at once in one non-blocking send straight from the read buffer (send_body): no copy and
// no write operation to complete, which is the common case of a client that keeps up. The header is relayed as received
// (hop-by-hop headers included, so a chunked response stays chunked), each read's body bytes
// framed as one chunk when the response is chunked. One watchdog timer per response enforces
// --upstream-timeout on both sides, instead of a timer armed and cancelled around every read
// and write.
#include "record/session.hpp"

#include <algorithm>
#include <array>
#include <cassert>
#include <cstdio>
#include <type_traits>

#include <boost/asio/write.hpp>

namespace retrace::record {

namespace {

// Relayed bytes the client has not taken yet beyond which the upstream is no longer read.
constexpr std::size_t kMaxPendingBytes = 1u << 20;

}  // namespace

void ClientSession::start_relay() {
  auto& parser = *response_parser_;
  auto& response = parser.get();
  frame_chunked_ = response.chunked();
  upstream_done_ = parser.is_done();  // no body: HEAD, 204, 304
  out_pending_.clear();
  out_pending_ += beast::buffers_to_string(
      http::fields::writer(response.base(), response.version(), response.result_int()).get());
  upstream_->expires_never();
  client_.expires_never();
  relay_active_ = true;
  ++relay_generation_;
  arm_watchdog(options_.upstream_timeout);
  if (!upstream_done_) do_read_body();
  flush_client();
}

// An event stream's capture reserves what the worker's last stream took (net::reserve_like).
void ClientSession::reserve_capture() {
  capture_.body.reserve_like(worker_.last_stream);
}

void ClientSession::do_read_body() {
  auto& parser = *response_parser_;
  auto& body = parser.get().body();
  body.data = read_buf_.data();  // read_buf_ outlives the read; its bytes are copied out after
  body.size = read_buf_.size();
  reading_ = true;
  read_since_ = WaitClock::now();
  // read_some, not read: read fills the whole buffer before it returns, which would hold back
  // a stream of small events. read_some returns what one socket read brought.
  // Plain TCP without first trying a socket the last read drained (net/drained_read.hpp).
  auto on_read = [self = shared_from_this()](error_code ec, std::size_t) { self->on_read_body(ec); };
  upstream_->visit([&](auto& stream) {
    if constexpr (std::is_same_v<std::decay_t<decltype(stream)>, beast::tcp_stream>) {
      upstream_reader_.reset(stream.socket());
      http::async_read_some(upstream_reader_, upstream_->buffer(), parser, std::move(on_read));
    } else {
      http::async_read_some(stream, upstream_->buffer(), parser, std::move(on_read));
    }
  });
}

void ClientSession::on_read_body(error_code ec) {
  reading_ = false;
  if (ec == http::error::need_buffer) ec = {};
  if (!ec) parse_buffered();
  auto& parser = *response_parser_;
  std::size_t received = read_buf_.size() - parser.get().body().size;
  if (received > 0) {
    std::string_view piece(read_buf_.data(), received);
    const std::int64_t arrived_ns = recording_ ? ns_since(sent_at_) : 0;
    if (recording_ && piece.size() > capture_.body.room(options_.max_response_bytes)) {
      past_limit_ = true;
      piece = piece.substr(0, capture_.body.room(options_.max_response_bytes));  // the client gets as much
    }
    if (!client_failed_ && !piece.empty()) {
      send_body(piece);
      flush_client();  // the client's bytes leave before the kept copy is appended (and compressed)
    }
    if (recording_) capture_.body.append_within(piece, arrived_ns, options_.max_response_bytes);
  }
  if (upstream_stalled_) ec = beast::error::timeout;  // the watchdog closed it
  if (cut_ || client_failed_) return settle();
  if (past_limit_) {
    // No more reads: what is pending goes to the client, then settle() ends the exchange.
  } else if (ec) {
    upstream_error_ = ec;
  } else if (parser.is_done()) {
    upstream_done_ = true;
    if (frame_chunked_) out_pending_ += "0\r\n\r\n";
  } else if (out_pending_.size() < kMaxPendingBytes) {
    do_read_body();
  }  // else: the client is behind; on_write_client resumes reading once it catches up
  flush_client();
  settle();
}

// read_some returns after one chunk even when the socket read brought several (a parser set
// to eager would instead keep reading the socket until the body buffer filled, holding events
// back). Parse what is already buffered here, so that events the upstream sent together go to
// the client in one write.
void ClientSession::parse_buffered() {
  auto& parser = *response_parser_;
  auto& buffered = upstream_->buffer();
  while (!parser.is_done() && buffered.size() > 0 && parser.get().body().size > 0) {
    error_code ec;
    auto used = parser.put(buffered.data(), ec);
    buffered.consume(used);
    if (ec == http::error::need_buffer) break;  // read_buf_ full: the next read continues
    if (ec) break;  // need_more (a partial chunk), or a framing error the next read reports
    if (used == 0) break;
  }
}

// One read's body bytes to the client, framed as one chunk (size line, bytes, CRLF) when the
// response is chunked: sent now, from the read buffer, when nothing is waiting before them (no
// write in flight, nothing queued); what the socket does not take at once (a client behind:
// EAGAIN or a partial send), or all of it when something is waiting, is queued for flush_client,
// in order. A send that fails ends the relay as a failed client write does.
void ClientSession::send_body(std::string_view bytes) {
  char size_line[24];
  std::size_t line = 0;
  if (frame_chunked_)
    line = static_cast<std::size_t>(std::snprintf(size_line, sizeof size_line, "%zx\r\n", bytes.size()));
  const std::array<std::string_view, 3> pieces{std::string_view(size_line, line), bytes,
                                               std::string_view("\r\n", frame_chunked_ ? 2 : 0)};
  std::size_t sent = 0;
  if (!writing_ && out_pending_.empty() && !cut_) {
    const std::array<asio::const_buffer, 3> buffers{asio::buffer(pieces[0]), asio::buffer(pieces[1]),
                                                    asio::buffer(pieces[2])};
    error_code ec;
    sent = client_.socket().send(buffers, 0, ec);
    if (ec == asio::error::would_block || ec == asio::error::try_again) {
      sent = 0;
    } else if (ec) {
      client_failed_ = true;
      client_error_ = ec;
      return;
    }
  }
  for (std::string_view piece : pieces) {  // the rest, for flush_client
    const std::size_t skip = std::min(sent, piece.size());
    sent -= skip;
    out_pending_.append(piece.substr(skip));
  }
}

void ClientSession::flush_client() {
  if (writing_ || out_pending_.empty() || client_failed_ || cut_) return;
  out_writing_.clear();
  std::swap(out_pending_, out_writing_);
  writing_ = true;
  write_since_ = WaitClock::now();
  asio::async_write(client_.socket(), asio::buffer(out_writing_),
                    [self = shared_from_this()](error_code ec, std::size_t) {
                      self->on_write_client(ec);
                    });
}

void ClientSession::on_write_client(error_code ec) {
  writing_ = false;
  if (ec && !cut_) {
    client_failed_ = true;
    client_error_ = ec;
    if (reading_) upstream_->close();  // cancels the upstream request
    return settle();
  }
  bool reading_paused = !reading_ && !upstream_done_ && !upstream_error_ && !past_limit_;
  if (reading_paused && !cut_) do_read_body();
  flush_client();
  settle();
}

// Ends the response once neither a read nor a write is outstanding, and only then.
void ClientSession::settle() {
  if (reading_ || writing_ || !relay_active_) return;
  if (!cut_ && !client_failed_ && !out_pending_.empty()) return flush_client();
  // No read outstanding means an end was reached: on_read_body pauses reading only with bytes
  // pending, and those went to flush_client above. Should that ever fail, a release build ends
  // the exchange here (finish_response does not pool a connection whose response is unfinished)
  // rather than leave the session in flight for ever.
  assert(cut_ || client_failed_ || past_limit_ || upstream_error_ || upstream_done_);
  relay_active_ = false;
  ++relay_generation_;
  watchdog_.cancel();
  if (cut_) return finish_cut();
  if (client_failed_) return client_gone(client_error_);
  if (past_limit_) return finish_past_limit();
  if (upstream_error_) return abort_stream();
  finish_response();
}

void ClientSession::arm_watchdog(WaitClock::duration after) {
  watchdog_.expires_after(after);
  watchdog_.async_wait([self = shared_from_this(), generation = relay_generation_](error_code ec) {
    if (!ec && generation == self->relay_generation_) self->on_watchdog();
  });
}

// An operation that made no progress for --upstream-timeout is given up: a stalled upstream
// read ends the stream as a timeout, a stalled client write as a client gone.
void ClientSession::on_watchdog() {
  auto now = WaitClock::now();
  auto timeout = std::chrono::duration_cast<WaitClock::duration>(options_.upstream_timeout);
  auto next = WaitClock::time_point::max();
  if (reading_) {
    if (now - read_since_ >= timeout) {
      upstream_stalled_ = true;
      upstream_->close();
    } else {
      next = std::min(next, read_since_ + timeout);
    }
  }
  if (writing_) {
    if (now - write_since_ >= timeout) {
      client_stalled_ = true;
      // Abortive close (RST): a graceful one would leave the kernel trickling the unread
      // send buffer to a client that does not read.
      error_code ignored;
      client_.socket().set_option(tcp::socket::linger(true, 0), ignored);
      client_.close();
    } else {
      next = std::min(next, write_since_ + timeout);
    }
  }
  if (next != WaitClock::time_point::max()) arm_watchdog(next - now);
}

// ---- endings -----------------------------------------------------------------------------------

void ClientSession::finish_response() {
  upstream_->responses++;
  // A HEAD response has no body, but an upstream that sends one anyway (as `retrace serve` once
  // did) would leave it on the connection for the next request: HEAD connections are not reused.
  bool reusable = upstream_keep_alive_ && response_parser_->is_done() && !cut_ && !head_request_ &&
                  upstream_->idle_clean();
  if (reusable) worker_.pool().put(std::move(upstream_));
  complete(!client_keep_alive_);
}

// The upstream failed after the client got the response header: end the client's stream the
// same way — close without the terminating chunk, short of the Content-Length.
void ClientSession::abort_stream() {
  auto kind = net::classify(upstream_error_, net::Phase::read_body);
  auto message = net::describe(upstream_error_, net::Phase::read_body, options_.upstream.str());
  // A trailer field past what Beast's fields hold: named, as one in the head is.
  if (upstream_error_ == http::error::header_limit && !response_parser_->oversized().empty())
    message = "upstream's response trailer: " + response_parser_->oversized() + " (" + message + ")";
  capture_.exchange.error = {kind, std::move(message)};
  capture_.exchange.decode_note = "response ended early: " + capture_.exchange.error.message;
  complete(true);
}

// The client closed (or stopped reading) mid-response: cancel the upstream request.
void ClientSession::client_gone(error_code ec) {
  auto what = client_stalled_
                  ? "client stopped reading for --upstream-timeout (" +
                        std::to_string(options_.upstream_timeout.count()) + " ms)"
                  : "client closed the connection before the response ended (" + ec.message() + ")";
  capture_.exchange.error = {ErrorKind::cut, what + "; upstream request cancelled"};
  capture_.exchange.decode_note = "response cut: the client went away";
  complete(true);
}

void ClientSession::finish_cut() {
  capture_.exchange.error = {ErrorKind::cut,
                             "recording stopped before the response ended (shutdown deadline)"};
  capture_.exchange.decode_note = "response cut at shutdown";
  complete(true);
}

// A recorded response reached --max-response-bytes (a stream that never ends): the client's
// stream ends short there, as abort_stream() ends it, the upstream is closed, and the exchange
// is written truncated with what arrived up to the bound.
void ClientSession::finish_past_limit() {
  capture_.exchange.error = net::response_limit_error(options_.max_response_bytes);
  capture_.exchange.decode_note = "response cut at --max-response-bytes";
  complete(true);
}

}  // namespace retrace::record
