// A client connection's request side, the answers record gives itself, and completion. See
// session.hpp for the steps and which file holds which.
#include "record/session.hpp"

#include <cassert>

#include <boost/asio/write.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include "net/http_rules.hpp"
#include "net/upstream_retry.hpp"

namespace retrace::record {

namespace {

constexpr auto kClientIdleTimeout = std::chrono::seconds(300);
constexpr std::size_t kResponseHeaderLimit = net::kUpstreamResponseHeaderLimit;

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

template <class Fields>
std::vector<HttpHeader> copy_headers(const Fields& fields) {
  std::vector<HttpHeader> headers;
  for (const auto& field : fields)
    headers.push_back({std::string(field.name_string()), std::string(field.value())});
  return headers;
}

}  // namespace

ClientSession::ClientSession(Worker& worker, tcp::socket socket, std::uint64_t id)
    : worker_(worker),
      shared_(worker.shared()),
      options_(shared_.options),
      clock_(shared_.clock),
      client_(std::move(socket)),
      id_(id) {}

// A session normally ends between exchanges. One that ends in the middle of one went with a
// handler that threw (net/run_handlers.hpp drops it and the worker goes on): the exchange that
// began still ends, recorded as failed, so that it is not lost and the drain does not wait for it.
ClientSession::~ClientSession() {
  if (in_flight_) {
    try {
      auto& exchange = capture_.exchange;
      if (sent_) exchange.end_ns = ns_since(sent_at_);
      exchange.error = {ErrorKind::protocol,
                        "record failed on this exchange: one of its steps threw (record's log says "
                        "what); the client's connection was closed"};
      hand_over();
    } catch (...) {
      // Nothing more can be kept of it; the count below still lets the drain finish.
    }
    --shared_.in_flight;
  }
  worker_.forget(id_);
}

void ClientSession::start() {
  error_code ignored;
  client_.socket().set_option(tcp::no_delay(true), ignored);
  // The relay sends body bytes with a non-blocking send when no write is in flight
  // (relay.cpp, send_body); the asynchronous operations are unaffected.
  client_.socket().non_blocking(true, ignored);
  do_read_request();
}

void ClientSession::cut() {
  cut_ = true;
  if (upstream_) upstream_->close();
  close_client();
}

std::int64_t ClientSession::ns_since(Clock::time_point from) const {
  return ns_between(from, clock_.now());
}

std::int64_t ClientSession::wall_ns() const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(clock_.wall().time_since_epoch()).count();
}

// ---- client request ----------------------------------------------------------------------------

void ClientSession::do_read_request() {
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
void ClientSession::on_read_request_header(error_code ec) {
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

void ClientSession::do_read_request_body() {
  http::async_read(client_, client_buffer_, *request_parser_,
                   [self = shared_from_this()](error_code ec, std::size_t) {
                     self->on_read_request(ec);
                   });
}

void ClientSession::on_read_request(error_code ec) {
  if (ec == http::error::header_limit)
    return reject(http::status::request_header_fields_too_large,
                  !request_parser_->oversized().empty()
                      ? "request " + request_parser_->oversized()
                      : "request headers exceed " + std::to_string(options_.max_header) + " bytes");
  if (ec == http::error::body_limit)
    return reject(http::status::payload_too_large,
                  "request body exceeds --max-body " + std::to_string(options_.max_body) + " bytes");
  // A client that closed its side mid-body can still read an answer: it gets 400 at once, as from
  // serve, instead of a silent close (the exchange is kept as rejected, with what arrived).
  if (ec == http::error::partial_message && request_parser_->is_header_done())
    return reject(http::status::bad_request, body_cut_short());
  if (ec && ec != http::error::end_of_stream && ec != http::error::partial_message &&
      ec.category() == error_code(http::error::bad_version).category())
    return reject(http::status::bad_request, "malformed HTTP request: " + ec.message());
  if (ec) return close_client();  // the client went away, idled out, or we are shutting down
  begin_exchange();
}

std::string ClientSession::body_cut_short() const {
  std::string message = "the request body ended after " +
                        std::to_string(request_parser_->get().body().size()) + " bytes";
  if (auto length = request_parser_->content_length())
    message += " of the " + std::to_string(*length) + " its Content-Length gives";
  else if (request_parser_->chunked())
    message += ", inside a chunk or before the last chunk";
  return message + ": the client closed its side of the connection before the request was whole";
}

// An exchange begins (forwarded or rejected): counted in flight, and what arrived of the request
// captured when it is recorded (the body is the caller's to take). Whether it is, is decided
// here, before anything is copied: its path (--include-path/--exclude-path), then, for a request
// that goes upstream, its X-Retrace-Probe mark and --sample. A rejected request is kept whatever
// its mark or session: record's own answer to a bad client, with no body to name a session by.
void ClientSession::begin_capture(const http::request<http::string_body>& request, bool forwarded) {
  in_flight_ = true;
  ++shared_.in_flight;
  received_at_ = clock_.now();
  capture_ = CapturedExchange{};
  std::string_view session;
  if (!options_.session_header.empty()) {
    auto found = request.find(options_.session_header);
    if (found != request.end()) session = found->value();
  }
  not_recorded_ = nullptr;
  if (!path_selected(request.target(), options_.include_paths, options_.exclude_paths))
    not_recorded_ = &shared_.excluded;
  else if (forwarded && request.find(net::kProbeHeader) != request.end())
    not_recorded_ = &shared_.probes;
  else if (forwarded && !shared_.sampler.keeps_request(session, request.method_string(),
                                                       request.target(), request.body()))
    not_recorded_ = &shared_.sampled_out;
  recording_ = not_recorded_ == nullptr;
  if (!recording_) return;
  auto& exchange = capture_.exchange;
  exchange.request.method = std::string(request.method_string());
  exchange.request.target = std::string(request.target());
  exchange.request.headers = copy_headers(request);
  exchange.session_id = std::string(session);
  exchange.intended_send_ns = ns_between(shared_.run_start, received_at_);
}

void ClientSession::begin_exchange() {
  auto& request = request_parser_->get();
  ++shared_.forwarded;
  begin_capture(request, true);
  if (recording_) capture_.exchange.request.body = request.body();
  client_keep_alive_ = request.keep_alive();
  head_request_ = request.method() == http::verb::head;

  upstream_request_ = {};
  upstream_request_.method_string(request.method_string());
  upstream_request_.target(options_.upstream.join(request.target()));
  upstream_request_.version(11);
  net::HopByHop hop_by_hop(request[http::field::connection]);
  for (const auto& field : request)
    if (!hop_by_hop(field.name_string())) upstream_request_.insert(field.name_string(), field.value());
  upstream_request_.set(http::field::host, options_.upstream.host_header());
  upstream_request_.keep_alive(true);
  upstream_request_.body() = std::move(request.body());
  upstream_request_.prepare_payload();
  retried_ = false;
  acquire_upstream();
}

// ---- upstream ----------------------------------------------------------------------------------

void ClientSession::acquire_upstream() {
  upstream_ = retried_ ? nullptr : worker_.pool().take(options_.upstream);
  reused_ = upstream_ != nullptr;
  if (reused_) return do_write_upstream();
  upstream_ = std::make_unique<net::UpstreamConnection>(worker_.io().get_executor(), options_.upstream,
                                                        shared_.tls);
  upstream_->async_connect(options_.upstream_timeout,
                           [self = shared_from_this()](error_code ec, net::Phase phase) {
                             self->on_connect(ec, phase);
                           });
}

void ClientSession::on_connect(error_code ec, net::Phase phase) {
  if (ec || cut_) return fail_before_response(ec, phase);
  do_write_upstream();
}

void ClientSession::do_write_upstream() {
  sent_at_ = clock_.now();
  sent_ = true;
  auto& exchange = capture_.exchange;
  exchange.start_unix_ns = wall_ns();
  exchange.actual_send_ns = ns_between(shared_.run_start, sent_at_);
  upstream_->expires_after(options_.upstream_timeout);
  upstream_->visit([&](auto& stream) {
    http::async_write(stream, upstream_request_, [self = shared_from_this()](error_code ec, std::size_t) {
      self->on_write_upstream(ec);
    });
  });
}

bool ClientSession::retry_on_fresh_connection(error_code ec) {
  if (!net::may_retry_on_fresh_connection(reused_, retried_, cut_, ec)) return false;
  upstream_->close();
  upstream_.reset();
  retried_ = true;
  ++capture_.exchange.retries;
  acquire_upstream();
  return true;
}

// An upstream may answer before it has read the whole request (413 to a body too large for it)
// and close: the write then fails, but the answer is already on the connection. It is read and
// relayed like any response; only when none is there does the write's error stand.
void ClientSession::on_write_upstream(error_code ec) {
  if (ec && retry_on_fresh_connection(ec)) return;
  if (ec && (cut_ || ec == beast::error::timeout))
    return fail_before_response(ec, net::Phase::write_request);
  write_error_ = ec;
  do_read_header();
}

void ClientSession::do_read_header() {
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

void ClientSession::on_read_header(error_code ec) {
  if (ec && write_error_) return fail_before_response(write_error_, net::Phase::write_request);
  if (ec && !cut_ && !response_parser_->got_some() && retry_on_fresh_connection(ec)) return;
  if (ec == http::error::header_limit && !cut_)
    return fail_before_response(ec, net::Phase::read_header,
                                !response_parser_->oversized().empty()
                                    ? "upstream's response " + response_parser_->oversized()
                                    : "upstream's response header is over " +
                                          std::to_string(kResponseHeaderLimit) + " bytes");
  if (ec || cut_) return fail_before_response(ec, net::Phase::read_header);
  auto& response = response_parser_->get();
  // An interim response (100 Continue, 103 Early Hints) precedes the real one on the same
  // connection: relaying it as the answer would leave the real response unread, to be handed to
  // the next client of this pooled connection. 101 would switch protocols, which a relay of
  // HTTP messages cannot follow (Upgrade is hop-by-hop and never forwarded, so it is an error).
  auto status = response.result_int();
  if (status >= 100 && status < 200 && status != 101) return do_read_header();
  if (status == 101) return fail_before_response(http::error::bad_status, net::Phase::read_header);
  auto& exchange = capture_.exchange;
  exchange.first_byte_ns = ns_since(sent_at_);
  exchange.response.status = static_cast<std::uint16_t>(status);
  if (recording_) {
    exchange.response.headers = copy_headers(response);
    capture_.event_stream =
        beast::iequals(response[http::field::content_type].substr(0, 17), "text/event-stream");
    // Decoded on the trace thread; the client gets the bytes as the upstream sent them.
    capture_.content_encoding = std::string(response[http::field::content_encoding]);
    if (capture_.event_stream) reserve_capture();
    if (options_.on_answered) capture_.tag = options_.on_answered(exchange.request);
  }
  if (status >= 400)
    exchange.error = {ErrorKind::http_status,
                      "upstream answered " + std::to_string(status) + " " + std::string(response.reason())};
  upstream_keep_alive_ = response.keep_alive() && !write_error_;
  upstream_->honour_keep_alive(response[http::field::keep_alive]);
  client_keep_alive_ =
      client_keep_alive_ && response.keep_alive() && !response_parser_->need_eof() && !shared_.draining;
  if (!client_keep_alive_ && response.keep_alive()) response.keep_alive(false);
  start_relay();
}

// ---- record's own answers ----------------------------------------------------------------------

// No response from the upstream (or none record can relay: a header it cannot hold): answer the
// client ourselves, 504 for a timeout, else 502. `detail`, when given, replaces the error code's
// own text.
void ClientSession::fail_before_response(error_code ec, net::Phase phase, const std::string& detail) {
  if (cut_) return finish_cut();
  auto kind = net::classify(ec, phase);
  auto message = detail.empty() ? net::describe(ec, phase, options_.upstream.str())
                                : detail + " (" + std::string(net::to_string(phase)) + ", upstream " +
                                      options_.upstream.str() + ")";
  capture_.exchange.error = {kind, message};
  capture_.exchange.response.status = 0;
  if (upstream_) upstream_->close();
  upstream_.reset();
  auto status = kind == ErrorKind::timeout ? http::status::gateway_timeout : http::status::bad_gateway;
  std::string type = "upstream_" + std::string(to_string(kind));
  proxy_response_ = make_error_response(status, message, type, client_keep_alive_ && !shared_.draining);
  client_.expires_after(options_.upstream_timeout);
  http::async_write(client_, proxy_response_, [self = shared_from_this()](error_code ec, std::size_t) {
    self->complete(ec || !self->proxy_response_.keep_alive());
  });
}

// A request record cannot take (malformed, headers or body over the limits) is answered here and
// never goes upstream; the connection closes after the answer. It is recorded all the same, as far
// as it was read (no body), with the status record answered, the answer's headers and body, and
// ErrorKind::rejected; its times run from when record gave up reading it.
void ClientSession::reject(http::status status, const std::string& message) {
  begin_capture(request_parser_->get(), false);
  sent_at_ = received_at_;
  sent_ = true;
  std::string type = status == http::status::bad_request ? "invalid_request" : "request_too_large";
  proxy_response_ = make_error_response(status, message, type, false);
  auto& exchange = capture_.exchange;
  if (recording_) {
    exchange.start_unix_ns = wall_ns();
    exchange.actual_send_ns = exchange.intended_send_ns;
    exchange.response.headers = copy_headers(proxy_response_);
    capture_.body.assign_unmarked(proxy_response_.body());
  }
  exchange.response.status = static_cast<std::uint16_t>(status);
  exchange.error = {ErrorKind::rejected, "record answered " + std::to_string(static_cast<int>(status)) +
                                             " itself and did not forward the request: " + message};
  client_.expires_after(std::chrono::seconds(10));
  http::async_write(client_, proxy_response_,
                    [self = shared_from_this()](error_code, std::size_t) { self->complete(true); });
}

// ---- completion --------------------------------------------------------------------------------

// Every exchange that began ends here exactly once.
void ClientSession::complete(bool close_after) {
  auto& exchange = capture_.exchange;
  if (sent_) exchange.end_ns = ns_since(sent_at_);
  if (upstream_) upstream_->close();
  upstream_.reset();
  hand_over();
  capture_ = CapturedExchange{};
  response_parser_.reset();
  upstream_error_ = {};
  client_error_ = {};
  write_error_ = {};
  client_failed_ = upstream_stalled_ = client_stalled_ = past_limit_ = false;
  upstream_done_ = false;
  sent_ = false;
  in_flight_ = false;
  --shared_.in_flight;
  if (close_after || cut_ || shared_.draining) return close_client();
  do_read_request();
}

// Called once per exchange that began; counts one not recorded by why (record/metrics.hpp).
void ClientSession::hand_over() {
  if (!recording_) {
    if (not_recorded_) not_recorded_->fetch_add(1, std::memory_order_relaxed);
    not_recorded_ = nullptr;
    return;
  }
  recording_ = false;
  if (capture_.event_stream) worker_.last_stream = capture_.body.size_like();
  auto index = shared_.captured.fetch_add(1);
  auto limit = options_.max_exchanges;
  if (limit == 0 || index < limit) shared_.submit(std::move(capture_));
  else shared_.over_limit.fetch_add(1, std::memory_order_relaxed);
  if (limit != 0 && index + 1 == limit) shared_.on_limit();
}

void ClientSession::close_client() {
  error_code ignored;
  client_.socket().shutdown(tcp::socket::shutdown_both, ignored);
  client_.close();
}

}  // namespace retrace::record
