// The relay: one ClientSession per client connection, in the style of Beast's advanced server
// (do_x starts an operation, on_x completes it) and its relay() example (a buffer_body parser and
// serializer: each piece of the upstream's body goes to the client as soon as it is read).
//
// Per request:
//   read request ─► upstream from pool (or connect) ─► write request ─► read response header
//     ─► write header to client ─► { read body piece ─► record (offset, bytes) ─► write piece } ─► done
// A reused pooled connection that fails before any response byte is retried once on a fresh one
// (the upstream may have closed it while idle). Everything runs on the worker's single thread.
#include "record/proxy.hpp"

#include <array>
#include <cassert>
#include <cctype>
#include <cstdio>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include "net/http_rules.hpp"

namespace retrace::record {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using net::error_code;
using net::tcp;
using Clock = std::chrono::steady_clock;

namespace {

constexpr auto kClientIdleTimeout = std::chrono::seconds(300);
constexpr std::size_t kResponseHeaderLimit = 256u << 10;
// Relayed bytes the client has not taken yet beyond which the upstream is no longer read.
constexpr std::size_t kMaxPendingBytes = 1u << 20;

std::int64_t ns_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(to - from).count();
}

bool iequals_prefix(std::string_view text, std::string_view prefix) {
  if (text.size() < prefix.size()) return false;
  for (std::size_t i = 0; i < prefix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(text[i])) != prefix[i]) return false;
  return true;
}

template <class Fields>
std::vector<HttpHeader> copy_headers(const Fields& fields) {
  std::vector<HttpHeader> headers;
  for (const auto& field : fields)
    headers.push_back({std::string(field.name_string()), std::string(field.value())});
  return headers;
}

}  // namespace

class ClientSession : public std::enable_shared_from_this<ClientSession> {
 public:
  ClientSession(Worker& worker, tcp::socket socket, std::uint64_t id)
      : worker_(worker),
        shared_(worker.shared()),
        options_(shared_.options),
        client_(std::move(socket)),
        id_(id) {}
  ~ClientSession() { worker_.forget(id_); }

  void start() {
    error_code ignored;
    client_.socket().set_option(tcp::no_delay(true), ignored);
    do_read_request();
  }

  void close_if_idle() {
    if (!in_flight_) close_client();
  }

  void cut() {
    cut_ = true;
    if (upstream_) upstream_->close();
    close_client();
  }

 private:
  // ---- client request ------------------------------------------------------------------------

  void do_read_request() {
    if (shared_.draining) return close_client();
    request_parser_.emplace();
    request_parser_->header_limit(static_cast<std::uint32_t>(options_.max_header));
    request_parser_->body_limit(options_.max_body);
    client_.expires_after(kClientIdleTimeout);
    http::async_read_header(client_, client_buffer_, *request_parser_,
                            [self = shared_from_this()](error_code ec, std::size_t) {
                              self->on_read_request_header(ec);
                            });
  }

  // A client that sent `Expect: 100-continue` (curl does for bodies over 1 MB) waits for an interim
  // 100 before its body. The proxy reads the whole request before it goes upstream, so it answers
  // the expectation itself, as nginx does, and the upstream never sees it (see begin_exchange).
  void on_read_request_header(error_code ec) {
    if (ec) return on_read_request(ec);
    if (request_parser_->is_done()) return on_read_request(ec);
    if (beast::iequals(request_parser_->get()[http::field::expect], "100-continue")) {
      static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
      return asio::async_write(client_.socket(), asio::buffer(kContinue.data(), kContinue.size()),
                               [self = shared_from_this()](error_code ec, std::size_t) {
                                 if (ec) return self->close_client();
                                 self->do_read_request_body();
                               });
    }
    do_read_request_body();
  }

  void do_read_request_body() {
    http::async_read(client_, client_buffer_, *request_parser_,
                     [self = shared_from_this()](error_code ec, std::size_t) {
                       self->on_read_request(ec);
                     });
  }

  void on_read_request(error_code ec) {
    if (ec == http::error::header_limit)
      return respond_and_close(http::status::request_header_fields_too_large,
                               "request headers exceed " + std::to_string(options_.max_header) +
                                   " bytes");
    if (ec == http::error::body_limit)
      return respond_and_close(http::status::payload_too_large,
                               "request body exceeds --max-body " +
                                   std::to_string(options_.max_body) + " bytes");
    if (ec && ec != http::error::end_of_stream && ec != http::error::partial_message &&
        ec.category() == error_code(http::error::bad_version).category())
      return respond_and_close(http::status::bad_request, "malformed HTTP request: " + ec.message());
    if (ec) return close_client();  // the client went away, idled out, or we are shutting down
    begin_exchange();
  }

  void begin_exchange() {
    auto& request = request_parser_->get();
    in_flight_ = true;
    ++shared_.in_flight;
    ++shared_.forwarded;
    received_at_ = Clock::now();
    recording_ = path_selected(request.target(), options_.include_paths, options_.exclude_paths);
    client_keep_alive_ = request.keep_alive();
    head_request_ = request.method() == http::verb::head;

    capture_ = CapturedExchange{};
    auto& exchange = capture_.exchange;
    if (recording_) {
      exchange.request.method = std::string(request.method_string());
      exchange.request.target = std::string(request.target());
      exchange.request.headers = copy_headers(request);
      exchange.request.body = request.body();
      if (!options_.session_header.empty()) {
        auto found = request.find(options_.session_header);
        if (found != request.end()) exchange.session_id = std::string(found->value());
      }
      exchange.intended_send_ns = ns_between(shared_.run_start, received_at_);
    }

    upstream_request_ = {};
    upstream_request_.method_string(request.method_string());
    upstream_request_.target(options_.upstream.join(request.target()));
    upstream_request_.version(11);
    net::HopByHop hop_by_hop(request[http::field::connection]);
    for (const auto& field : request)
      if (!hop_by_hop(field.name_string()))
        upstream_request_.insert(field.name_string(), field.value());
    upstream_request_.set(http::field::host, options_.upstream.host_header());
    upstream_request_.keep_alive(true);
    upstream_request_.body() = std::move(request.body());
    upstream_request_.prepare_payload();
    retried_ = false;
    acquire_upstream();
  }

  // ---- upstream ------------------------------------------------------------------------------

  void acquire_upstream() {
    upstream_ = retried_ ? nullptr : worker_.pool().take(options_.upstream);
    reused_ = upstream_ != nullptr;
    if (reused_) return do_write_upstream();
    upstream_ = std::make_unique<net::UpstreamConnection>(worker_.io().get_executor(),
                                                          options_.upstream, shared_.tls);
    upstream_->async_connect(options_.upstream_timeout,
                             [self = shared_from_this()](error_code ec, net::Phase phase) {
                               self->on_connect(ec, phase);
                             });
  }

  void on_connect(error_code ec, net::Phase phase) {
    if (ec || cut_) return fail_before_response(ec, phase);
    do_write_upstream();
  }

  void do_write_upstream() {
    sent_at_ = Clock::now();
    sent_ = true;
    auto& exchange = capture_.exchange;
    exchange.start_unix_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                 std::chrono::system_clock::now().time_since_epoch())
                                 .count();
    exchange.actual_send_ns = ns_between(shared_.run_start, sent_at_);
    upstream_->expires_after(options_.upstream_timeout);
    upstream_->visit([&](auto& stream) {
      http::async_write(stream, upstream_request_,
                        [self = shared_from_this()](error_code ec, std::size_t) {
                          self->on_write_upstream(ec);
                        });
    });
  }

  bool retry_on_fresh_connection(error_code ec) {
    if (!reused_ || retried_ || cut_ || ec == beast::error::timeout) return false;
    upstream_->close();
    upstream_.reset();
    retried_ = true;
    ++capture_.exchange.retries;
    acquire_upstream();
    return true;
  }

  void on_write_upstream(error_code ec) {
    if (ec && !retry_on_fresh_connection(ec)) return fail_before_response(ec, net::Phase::write_request);
    if (ec) return;
    do_read_header();
  }

  void do_read_header() {
    response_parser_.emplace();
    response_parser_->header_limit(kResponseHeaderLimit);
    response_parser_->body_limit(boost::none);
    if (head_request_) response_parser_->skip(true);
    upstream_->expires_after(options_.upstream_timeout);
    upstream_->visit([&](auto& stream) {
      http::async_read_header(stream, upstream_->buffer(), *response_parser_,
                              [self = shared_from_this()](error_code ec, std::size_t) {
                                self->on_read_header(ec);
                              });
    });
  }

  void on_read_header(error_code ec) {
    if (ec && !cut_ && !response_parser_->got_some() && retry_on_fresh_connection(ec)) return;
    if (ec || cut_) return fail_before_response(ec, net::Phase::read_header);
    auto& response = response_parser_->get();
    // An interim response (100 Continue, 103 Early Hints) precedes the real one on the same
    // connection: relaying it as the answer would leave the real response unread, to be handed to
    // the next client of this pooled connection. 101 would switch protocols, which a relay of
    // HTTP messages cannot follow (Upgrade is hop-by-hop and never forwarded, so it is an error).
    auto status = response.result_int();
    if (status >= 100 && status < 200 && status != 101) return do_read_header();
    if (status == 101)
      return fail_before_response(http::error::bad_status, net::Phase::read_header);
    auto& exchange = capture_.exchange;
    exchange.first_byte_ns = ns_between(sent_at_, Clock::now());
    exchange.response.status = static_cast<std::uint16_t>(response.result_int());
    if (recording_) {
      exchange.response.headers = copy_headers(response);
      capture_.event_stream =
          iequals_prefix(response[http::field::content_type], "text/event-stream");
      // Decoded on the trace thread; the client gets the bytes as the upstream sent them.
      capture_.content_encoding = std::string(response[http::field::content_encoding]);
    }
    if (response.result_int() >= 400)
      exchange.error = {ErrorKind::http_status,
                        "upstream answered " + std::to_string(response.result_int()) + " " +
                            std::string(response.reason())};
    upstream_keep_alive_ = response.keep_alive();
    upstream_->honour_keep_alive(response[http::field::keep_alive]);
    client_keep_alive_ = client_keep_alive_ && response.keep_alive() &&
                         !response_parser_->need_eof() && !shared_.draining;
    if (!client_keep_alive_ && response.keep_alive()) response.keep_alive(false);
    start_relay();
  }

  // ---- body relay ----------------------------------------------------------------------------
  //
  // The upstream read and the client write run at the same time: while one write is on its way to
  // the client the next upstream read is already waiting, and whatever arrives meanwhile goes out
  // in the next single write (coalesced, never held back). The header is relayed as received
  // (hop-by-hop headers included, so a chunked response stays chunked), each read's body bytes
  // framed as one chunk when the response is chunked. One watchdog timer per response enforces
  // --upstream-timeout on both sides, instead of a timer armed and cancelled around every read
  // and write.

  void start_relay() {
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

  void do_read_body() {
    auto& parser = *response_parser_;
    auto& body = parser.get().body();
    body.data = read_buf_.data();  // read_buf_ outlives the read; its bytes are copied out after
    body.size = read_buf_.size();
    reading_ = true;
    read_since_ = Clock::now();
    // read_some, not read: read fills the whole buffer before it returns, which would hold back
    // a stream of small events. read_some returns what one socket read brought.
    upstream_->visit([&](auto& stream) {
      http::async_read_some(stream, upstream_->buffer(), parser,
                            [self = shared_from_this()](error_code ec, std::size_t) {
                              self->on_read_body(ec);
                            });
    });
  }

  void on_read_body(error_code ec) {
    reading_ = false;
    if (ec == http::error::need_buffer) ec = {};
    if (!ec) parse_buffered();
    auto& parser = *response_parser_;
    std::size_t received = read_buf_.size() - parser.get().body().size;
    if (received > 0) {
      if (recording_) {
        capture_.body.append(read_buf_.data(), received);
        capture_.chunks.push_back({ns_between(sent_at_, Clock::now()), capture_.body.size()});
      }
      if (!client_failed_) queue_body(std::string_view(read_buf_.data(), received));
    }
    if (upstream_stalled_) ec = beast::error::timeout;  // the watchdog closed it
    if (cut_ || client_failed_) return settle();
    if (ec) {
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
  void parse_buffered() {
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

  void queue_body(std::string_view bytes) {
    if (frame_chunked_) {
      char size_line[24];
      int n = std::snprintf(size_line, sizeof size_line, "%zx\r\n", bytes.size());
      out_pending_.append(size_line, static_cast<std::size_t>(n));
      out_pending_ += bytes;
      out_pending_ += "\r\n";
    } else {
      out_pending_ += bytes;
    }
  }

  void flush_client() {
    if (writing_ || out_pending_.empty() || client_failed_ || cut_) return;
    out_writing_.clear();
    std::swap(out_pending_, out_writing_);
    writing_ = true;
    write_since_ = Clock::now();
    asio::async_write(client_.socket(), asio::buffer(out_writing_),
                      [self = shared_from_this()](error_code ec, std::size_t) {
                        self->on_write_client(ec);
                      });
  }

  void on_write_client(error_code ec) {
    writing_ = false;
    if (ec && !cut_) {
      client_failed_ = true;
      client_error_ = ec;
      if (reading_) upstream_->close();  // cancels the upstream request
      return settle();
    }
    bool reading_paused = !reading_ && !upstream_done_ && !upstream_error_;
    if (reading_paused && !cut_) do_read_body();
    flush_client();
    settle();
  }

  // Ends the response once neither a read nor a write is outstanding, and only then.
  void settle() {
    if (reading_ || writing_ || !relay_active_) return;
    if (!cut_ && !client_failed_ && !out_pending_.empty()) return flush_client();
    // No read outstanding means an end was reached: on_read_body pauses reading only with bytes
    // pending, and those went to flush_client above. Release builds wait rather than end early.
    assert(cut_ || client_failed_ || upstream_error_ || upstream_done_);
    if (!cut_ && !client_failed_ && !upstream_error_ && !upstream_done_) return;
    relay_active_ = false;
    ++relay_generation_;
    watchdog_.cancel();
    if (cut_) return finish_cut();
    if (client_failed_) return client_gone(client_error_);
    if (upstream_error_) return abort_stream();
    finish_response();
  }

  void arm_watchdog(std::chrono::steady_clock::duration after) {
    watchdog_.expires_after(after);
    watchdog_.async_wait([self = shared_from_this(), generation = relay_generation_](error_code ec) {
      if (!ec && generation == self->relay_generation_) self->on_watchdog();
    });
  }

  // An operation that made no progress for --upstream-timeout is given up: a stalled upstream
  // read ends the stream as a timeout, a stalled client write as a client gone.
  void on_watchdog() {
    auto now = Clock::now();
    auto timeout = std::chrono::duration_cast<Clock::duration>(options_.upstream_timeout);
    auto next = Clock::time_point::max();
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
    if (next != Clock::time_point::max()) arm_watchdog(next - now);
  }

  // ---- endings -------------------------------------------------------------------------------

  void finish_response() {
    upstream_->responses++;
    // A HEAD response has no body, but an upstream that sends one anyway (as `retrace serve` once
    // did) would leave it on the connection for the next request: HEAD connections are not reused.
    bool reusable = upstream_keep_alive_ && response_parser_->is_done() && !cut_ &&
                    !head_request_ && upstream_->idle_clean();
    if (reusable) worker_.pool().put(std::move(upstream_));
    complete(!client_keep_alive_);
  }

  // The upstream failed after the client got the response header: end the client's stream the
  // same way — close without the terminating chunk, short of the Content-Length.
  void abort_stream() {
    auto kind = net::classify(upstream_error_, net::Phase::read_body);
    capture_.exchange.error = {kind, net::describe(upstream_error_, net::Phase::read_body,
                                                   options_.upstream.str())};
    capture_.exchange.decode_note = "response ended early: " + capture_.exchange.error.message;
    complete(true);
  }

  // The client closed (or stopped reading) mid-response: cancel the upstream request.
  void client_gone(error_code ec) {
    auto what = client_stalled_
                    ? "client stopped reading for --upstream-timeout (" +
                          std::to_string(options_.upstream_timeout.count()) + " ms)"
                    : "client closed the connection before the response ended (" + ec.message() + ")";
    capture_.exchange.error = {ErrorKind::cut, what + "; upstream request cancelled"};
    capture_.exchange.decode_note = "response cut: the client went away";
    complete(true);
  }

  void finish_cut() {
    capture_.exchange.error = {ErrorKind::cut,
                               "recording stopped before the response ended (shutdown deadline)"};
    capture_.exchange.decode_note = "response cut at shutdown";
    complete(true);
  }

  // No response from the upstream: answer the client ourselves, 504 for a timeout, else 502.
  void fail_before_response(error_code ec, net::Phase phase) {
    if (cut_) return finish_cut();
    auto kind = net::classify(ec, phase);
    auto message = net::describe(ec, phase, options_.upstream.str());
    capture_.exchange.error = {kind, message};
    capture_.exchange.response.status = 0;
    if (upstream_) upstream_->close();
    upstream_.reset();
    auto status = kind == ErrorKind::timeout ? http::status::gateway_timeout : http::status::bad_gateway;
    std::string type = "upstream_" + std::string(to_string(kind));
    proxy_response_ = make_error_response(status, message, type, client_keep_alive_ && !shared_.draining);
    client_.expires_after(options_.upstream_timeout);
    http::async_write(client_, proxy_response_,
                      [self = shared_from_this()](error_code ec, std::size_t) {
                        self->complete(ec || !self->proxy_response_.keep_alive());
                      });
  }

  http::response<http::string_body> make_error_response(http::status status, const std::string& message,
                                                        const std::string& type, bool keep_alive) {
    boost::json::object error;
    error["message"] = "retrace record: " + message;
    error["type"] = type;
    error["code"] = static_cast<int>(status);
    boost::json::object body;
    body["error"] = std::move(error);
    http::response<http::string_body> response{status, 11};
    response.set(http::field::server, "retrace-record");
    response.set(http::field::content_type, "application/json");
    response.body() = boost::json::serialize(body);
    response.keep_alive(keep_alive);
    response.prepare_payload();
    return response;
  }

  // The proxy's own answer to a request it could not parse; the connection closes after it.
  void respond_and_close(http::status status, const std::string& message) {
    std::string type = status == http::status::bad_request ? "invalid_request" : "request_too_large";
    proxy_response_ = make_error_response(status, message, type, false);
    client_.expires_after(std::chrono::seconds(10));
    http::async_write(client_, proxy_response_,
                      [self = shared_from_this()](error_code, std::size_t) { self->close_client(); });
  }

  // Every exchange that began ends here exactly once.
  void complete(bool close_after) {
    auto& exchange = capture_.exchange;
    if (sent_) exchange.end_ns = ns_between(sent_at_, Clock::now());
    if (upstream_) upstream_->close();
    upstream_.reset();
    if (recording_) {
      auto index = shared_.captured.fetch_add(1);
      auto limit = options_.max_exchanges;
      if (limit == 0 || index < limit) shared_.submit(std::move(capture_));
      if (limit != 0 && index + 1 == limit) shared_.on_limit();
    }
    capture_ = CapturedExchange{};
    response_parser_.reset();
    upstream_error_ = {};
    client_error_ = {};
    client_failed_ = upstream_stalled_ = client_stalled_ = false;
    upstream_done_ = false;
    sent_ = false;
    in_flight_ = false;
    --shared_.in_flight;
    if (close_after || cut_ || shared_.draining) return close_client();
    do_read_request();
  }

  void close_client() {
    error_code ignored;
    client_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    client_.close();
  }

  Worker& worker_;
  ProxyShared& shared_;
  const RecordOptions& options_;
  beast::tcp_stream client_;
  std::uint64_t id_;
  beast::flat_buffer client_buffer_;
  std::optional<http::request_parser<http::string_body>> request_parser_;
  http::request<http::string_body> upstream_request_;
  http::response<http::string_body> proxy_response_;  // must outlive its write
  std::unique_ptr<net::UpstreamConnection> upstream_;
  std::optional<http::response_parser<http::buffer_body>> response_parser_;
  std::array<char, net::UpstreamConnection::kReadRoomBytes> read_buf_{};
  std::string out_pending_;  // relayed bytes not yet handed to a client write
  std::string out_writing_;  // the client write in flight (must outlive it)
  asio::steady_timer watchdog_{client_.get_executor()};
  std::uint64_t relay_generation_ = 0;  // a watchdog firing for an earlier response is ignored
  Clock::time_point read_since_{};
  Clock::time_point write_since_{};
  error_code client_error_;
  CapturedExchange capture_;
  Clock::time_point received_at_{};
  Clock::time_point sent_at_{};
  error_code upstream_error_;
  bool sent_ = false;
  bool in_flight_ = false;
  bool recording_ = false;
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
};

Worker::Worker(ProxyShared& shared) : shared_(shared) { work_.emplace(io_.get_executor()); }

Worker::~Worker() { pool_.clear(); }

void Worker::run() {
  io_.run();
  finished_ = true;
}

void Worker::start_session(tcp::socket socket) {
  if (shared_.draining) {
    error_code ignored;
    socket.close(ignored);
    return;
  }
  auto id = next_session_id_++;
  auto session = std::make_shared<ClientSession>(*this, std::move(socket), id);
  sessions_.emplace(id, session);
  session->start();
}

void Worker::close_idle_sessions() {
  // Copy first: closing may complete handlers that erase from sessions_ (they run later, but be
  // safe against re-entrancy).
  std::vector<std::shared_ptr<ClientSession>> alive;
  for (auto& [id, weak] : sessions_)
    if (auto session = weak.lock()) alive.push_back(std::move(session));
  for (auto& session : alive) session->close_if_idle();
}

void Worker::cut_sessions() {
  std::vector<std::shared_ptr<ClientSession>> alive;
  for (auto& [id, weak] : sessions_)
    if (auto session = weak.lock()) alive.push_back(std::move(session));
  for (auto& session : alive) session->cut();
}

void Worker::finish() {
  pool_.clear();
  cut_sessions();
  work_.reset();
}

}  // namespace retrace::record
