// A mirror leg: the bounded queue, its thread, and one exchange with the mirror's server.
#include "shadow/mirror.hpp"

#include <pthread.h>

#include <array>

#include <boost/asio/post.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "base/ascii.hpp"
#include "format/redaction.hpp"
#include "net/arrived_body.hpp"
#include "net/field_bounded_parser.hpp"
#include "net/http_rules.hpp"
#include "net/upstream_retry.hpp"

namespace retrace::shadow {

namespace beast = boost::beast;
namespace http = boost::beast::http;
using net::error_code;

std::string_view to_string(Leg leg) {
  switch (leg) {
    case Leg::primary: return "primary";
    case Leg::control: return "control";
    case Leg::candidate: return "candidate";
  }
  return "?";
}

std::vector<HttpHeader> mirror_headers(const std::vector<HttpHeader>& client,
                                       const std::vector<HttpHeader>& credentials) {
  std::string_view connection;
  for (const auto& header : client)
    if (ascii_iequals(header.name, "connection")) connection = header.value;
  net::HopByHop hop_by_hop(connection);
  std::vector<HttpHeader> headers;
  for (const auto& header : client)
    if (!hop_by_hop(header.name) && !is_secret_header(header.name) && !ascii_iequals(header.name, "host"))
      headers.push_back(header);
  headers.insert(headers.end(), credentials.begin(), credentials.end());
  return headers;
}

namespace {
std::int64_t ns_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(to - from).count();
}
}  // namespace

// One request to the mirror and its response, read to the end on the mirror's thread: connect (or
// a pooled connection, retried once on a fresh one when it fails before any byte), write, read the
// header, read the body a socket read at a time, each read marked with its arrival.
class MirrorExchange : public std::enable_shared_from_this<MirrorExchange> {
 public:
  MirrorExchange(Mirror& mirror, std::uint64_t id, std::uint64_t tag, const Request& request)
      : mirror_(mirror), options_(mirror.options_), id_(id) {
    capture_.tag = tag;
    auto& exchange = capture_.exchange;
    exchange.request = request;
    exchange.request.headers = mirror_headers(exchange.request.headers, options_.credentials);
    out_.method_string(exchange.request.method);
    out_.target(options_.url.join(exchange.request.target));
    out_.version(11);
    for (const auto& header : exchange.request.headers) out_.insert(header.name, header.value);
    out_.set(http::field::host, options_.url.host_header());
    out_.keep_alive(true);
    out_.body() = exchange.request.body;
    out_.prepare_payload();
    head_ = exchange.request.method == "HEAD";
  }

  void start() {
    connection_ = retried_ ? nullptr : mirror_.pool_.take(options_.url);
    reused_ = connection_ != nullptr;
    if (reused_) return write();
    connection_ = std::make_unique<net::UpstreamConnection>(mirror_.io_.get_executor(), options_.url,
                                                            options_.tls);
    connection_->async_connect(options_.timeout, [self = shared_from_this()](error_code ec, net::Phase phase) {
      if (ec || self->cut_) return self->fail(ec ? ec : net::asio::error::operation_aborted, phase);
      self->write();
    });
  }

  void cut() {
    cut_ = true;
    if (connection_) connection_->close();
  }

 private:
  void write() {
    sent_at_ = mirror_.clock_.now();
    sent_ = true;
    auto& exchange = capture_.exchange;
    exchange.start_unix_ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(mirror_.clock_.wall().time_since_epoch()).count();
    exchange.actual_send_ns = exchange.intended_send_ns = ns_between(mirror_.run_start_, sent_at_);
    mirror_.sent.fetch_add(1, std::memory_order_relaxed);
    connection_->expires_after(options_.timeout);
    connection_->visit([&](auto& stream) {
      http::async_write(stream, out_, [self = shared_from_this()](error_code ec, std::size_t) {
        if (ec && self->retry(ec)) return;
        if (ec) return self->fail(ec, net::Phase::write_request);
        self->read_header();
      });
    });
  }

  bool retry(error_code ec) {
    if (!net::may_retry_on_fresh_connection(reused_, retried_, cut_, ec)) return false;
    connection_->close();
    connection_.reset();
    retried_ = true;
    ++capture_.exchange.retries;
    start();
    return true;
  }

  void read_header() {
    parser_.emplace();
    parser_->header_limit(net::kUpstreamResponseHeaderLimit);
    parser_->body_limit(boost::none);
    if (head_) parser_->skip(true);
    connection_->expires_after(options_.timeout);
    connection_->visit([&](auto& stream) {
      http::async_read_header(stream, connection_->buffer(), *parser_,
                              [self = shared_from_this()](error_code ec, std::size_t) { self->on_header(ec); });
    });
  }

  void on_header(error_code ec) {
    if (ec && !cut_ && !parser_->got_some() && retry(ec)) return;
    if (ec || cut_) return fail(ec ? ec : net::asio::error::operation_aborted, net::Phase::read_header);
    auto& response = parser_->get();
    const auto status = response.result_int();
    if (status >= 100 && status < 200 && status != 101) return read_header();
    auto& exchange = capture_.exchange;
    exchange.first_byte_ns = ns_between(sent_at_, mirror_.clock_.now());
    exchange.response.status = static_cast<std::uint16_t>(status);
    for (const auto& field : response)
      exchange.response.headers.push_back({std::string(field.name_string()), std::string(field.value())});
    capture_.event_stream = beast::iequals(response[http::field::content_type].substr(0, 17), "text/event-stream");
    capture_.content_encoding = std::string(response[http::field::content_encoding]);
    if (status >= 400)
      exchange.error = {ErrorKind::http_status,
                        "mirror answered " + std::to_string(status) + " " + std::string(response.reason())};
    keep_alive_ = response.keep_alive();
    connection_->honour_keep_alive(response[http::field::keep_alive]);
    if (parser_->is_done()) return finish();
    read_body();
  }

  void read_body() {
    auto& body = parser_->get().body();
    body.data = buffer_.data();
    body.size = buffer_.size();
    connection_->expires_after(options_.timeout);
    connection_->visit([&](auto& stream) {
      http::async_read_some(stream, connection_->buffer(), *parser_,
                            [self = shared_from_this()](error_code ec, std::size_t) { self->on_body(ec); });
    });
  }

  void on_body(error_code ec) {
    if (ec == http::error::need_buffer) ec = {};
    auto& body = parser_->get().body();
    const std::size_t got = buffer_.size() - body.size;
    if (got > 0 &&
        !capture_.body.append_within(std::string_view(buffer_.data(), got),
                                     ns_between(sent_at_, mirror_.clock_.now()), options_.max_response_bytes)) {
      capture_.exchange.error = net::response_limit_error(options_.max_response_bytes);
      keep_alive_ = false;
      return finish();
    }
    if (ec || cut_) {
      auto kind = cut_ ? ErrorKind::cut : net::classify(ec, net::Phase::read_body);
      capture_.exchange.error = {kind, cut_ ? "shadow stopped before the mirror's response ended"
                                            : net::describe(ec, net::Phase::read_body, options_.url.str())};
      keep_alive_ = false;
      return finish();
    }
    if (parser_->is_done()) return finish();
    read_body();
  }

  void fail(error_code ec, net::Phase phase) {
    auto& exchange = capture_.exchange;
    if (cut_) exchange.error = {ErrorKind::cut, "shadow stopped before the mirror answered"};
    else exchange.error = {net::classify(ec, phase), net::describe(ec, phase, options_.url.str())};
    exchange.response.status = 0;
    keep_alive_ = false;
    finish();
  }

  void finish() {
    auto& exchange = capture_.exchange;
    if (sent_) exchange.end_ns = ns_between(sent_at_, mirror_.clock_.now());
    if (connection_ && keep_alive_ && parser_ && parser_->is_done() && !cut_) {
      connection_->expires_never();
      ++connection_->responses;
      mirror_.pool_.put(std::move(connection_));
    } else if (connection_) {
      connection_->close();
    }
    connection_.reset();
    mirror_.finished.fetch_add(1, std::memory_order_relaxed);
    mirror_.submit_(std::move(capture_));
    mirror_.done(id_);
  }

  Mirror& mirror_;
  const MirrorOptions& options_;
  std::uint64_t id_;
  record::CapturedExchange capture_;
  http::request<http::string_body> out_;
  std::unique_ptr<net::UpstreamConnection> connection_;
  std::optional<net::BoundedResponseParser<http::buffer_body>> parser_;
  std::array<char, net::UpstreamConnection::kReadRoomBytes> buffer_{};
  Clock::time_point sent_at_{};
  bool sent_ = false, head_ = false, reused_ = false, retried_ = false, cut_ = false, keep_alive_ = false;
};

Mirror::Mirror(MirrorOptions options, const Clock& clock, Clock::time_point run_start,
               std::function<void(record::CapturedExchange&&)> submit,
               std::function<void(std::uint64_t tag, DropReason why)> on_dropped)
    : options_(std::move(options)),
      clock_(clock),
      run_start_(run_start),
      submit_(std::move(submit)),
      on_dropped_(std::move(on_dropped)) {
  work_.emplace(io_.get_executor());
}

Mirror::~Mirror() { stop(std::chrono::milliseconds(0)); }

void Mirror::start() {
  thread_ = std::thread([this] {
    ::pthread_setname_np(::pthread_self(), "rt-mirror");
    for (;;) {
      try {
        io_.run();
        return;
      } catch (...) {
        // A handler that threw costs its exchange; the leg goes on.
      }
    }
  });
}

bool Mirror::offer(std::uint64_t tag, std::shared_ptr<const Request> request) {
  offered.fetch_add(1, std::memory_order_relaxed);
  {
    std::lock_guard lock(mutex_);
    if (stopping_ || queue_.size() >= options_.queue) {
      dropped.fetch_add(1, std::memory_order_relaxed);
      if (on_dropped_) on_dropped_(tag, stopping_ ? DropReason::stopped : DropReason::queue_full);
      return false;
    }
    queue_.push_back({tag, std::move(request)});
  }
  net::asio::post(io_, [this] { pump(); });
  return true;
}

void Mirror::pump() {
  for (;;) {
    Job job;
    {
      std::lock_guard lock(mutex_);
      if (queue_.empty() || active_ >= options_.concurrency) return;
      job = std::move(queue_.front());
      queue_.pop_front();
      ++active_;
    }
    auto id = next_exchange_++;
    auto exchange = std::make_shared<MirrorExchange>(*this, id, job.tag, *job.request);
    live_.emplace(id, exchange);
    exchange->start();
  }
}

void Mirror::done(std::uint64_t exchange_id) {
  live_.erase(exchange_id);
  {
    std::lock_guard lock(mutex_);
    --active_;
  }
  idle_.notify_all();
  net::asio::post(io_, [this] { pump(); });
}

void Mirror::stop(std::chrono::milliseconds drain) {
  if (!thread_.joinable()) return;
  {
    std::unique_lock lock(mutex_);
    stopping_ = true;
    idle_.wait_for(lock, drain, [this] { return queue_.empty() && active_ == 0; });
    // What is still queued is not sent: dropped, counted apart from a full queue's drops.
    for (const auto& job : queue_) {
      dropped.fetch_add(1, std::memory_order_relaxed);
      if (on_dropped_) on_dropped_(job.tag, DropReason::stopped);
    }
    queue_.clear();
  }
  net::asio::post(io_, [this] {
    for (auto& [id, weak] : live_)
      if (auto exchange = weak.lock()) exchange->cut();
    pool_.clear();
    work_.reset();
  });
  thread_.join();
}

}  // namespace retrace::shadow
