// Record's admin endpoint and the upstream's readiness check (record/admin.hpp). A connection is
// Beast's examples' session: read a request, write its answer, read the next while keep-alive
// lasts; every wait is bounded (kIdleTimeout), every request too (kHeaderLimit, kBodyLimit), and
// so is the number of connections (kMaxConnections: more are closed at accept).
#include "record/admin.hpp"

#include <pthread.h>

#include <atomic>
#include <optional>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "base/prometheus.hpp"
#include "net/fetch.hpp"
#include "net/listener.hpp"
#include "net/run_handlers.hpp"

namespace retrace::record {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;

namespace {

constexpr std::size_t kHeaderLimit = 8u << 10;
constexpr std::size_t kBodyLimit = 4u << 10;
constexpr auto kIdleTimeout = std::chrono::seconds(30);
constexpr std::size_t kMaxConnections = 32;

class AdminSession : public std::enable_shared_from_this<AdminSession> {
 public:
  AdminSession(tcp::socket socket, const AdminHandlers& handlers, std::atomic<std::size_t>& open)
      : stream_(std::move(socket)), handlers_(handlers), open_(open) {
    ++open_;
  }
  ~AdminSession() { --open_; }

  void do_read() {
    parser_.emplace();
    parser_->header_limit(kHeaderLimit);
    parser_->body_limit(kBodyLimit);
    stream_.expires_after(kIdleTimeout);
    http::async_read(stream_, buffer_, *parser_, [self = shared_from_this()](error_code ec, std::size_t) {
      self->on_read(ec);
    });
  }

 private:
  void on_read(error_code ec) {
    if (ec == http::error::end_of_stream || ec == beast::error::timeout || ec == asio::error::eof ||
        ec == asio::error::connection_reset || ec == asio::error::operation_aborted)
      return close();
    if (ec) return answer(400, "text/plain", "bad request: " + ec.message() + "\n", false);
    const auto& request = parser_->get();
    auto target = request.target();
    auto path = target.substr(0, target.find('?'));
    bool keep_alive = request.keep_alive();
    head_ = request.method() == http::verb::head;
    bool known = path == "/healthz" || path == "/readyz" || path == "/metrics";
    if (!known)
      return answer(404, "text/plain",
                    "not found: retrace record's admin endpoint answers GET /healthz, /readyz and /metrics\n",
                    keep_alive);
    if (request.method() != http::verb::get && !head_)
      return answer(405, "text/plain", "method not allowed: use GET\n", keep_alive);
    if (path == "/healthz") return answer(200, "text/plain", "ok\n", keep_alive);
    if (path == "/readyz") {
      auto why = handlers_.not_ready();
      return why.empty() ? answer(200, "text/plain", "ready\n", keep_alive)
                         : answer(503, "text/plain", "not ready: " + why + "\n", keep_alive);
    }
    answer(200, kPrometheusContentType, handlers_.metrics(), keep_alive);
  }

  void answer(unsigned status, std::string_view content_type, std::string body, bool keep_alive) {
    response_ = {static_cast<http::status>(status), 11};
    response_.set(http::field::server, "retrace-record-admin");
    response_.set(http::field::content_type, content_type);
    if (status == 405) response_.set(http::field::allow, "GET, HEAD");
    response_.body() = std::move(body);
    response_.keep_alive(keep_alive);
    response_.prepare_payload();
    if (head_) response_.body().clear();  // Content-Length stays the GET's
    stream_.expires_after(kIdleTimeout);
    http::async_write(stream_, response_, [self = shared_from_this()](error_code ec, std::size_t) {
      if (ec || !self->response_.keep_alive()) return self->close();
      self->do_read();
    });
  }

  void close() {
    error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.close();
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  http::response<http::string_body> response_;  // must outlive its write
  bool head_ = false;
  const AdminHandlers& handlers_;
  std::atomic<std::size_t>& open_;
};

}  // namespace

struct AdminServer::Impl {
  // Declared before io: destroying io destroys the sessions still pending, which use both.
  AdminHandlers handlers;
  std::atomic<std::size_t> open{0};
  asio::io_context io{1};
  tcp::acceptor acceptor{io};
  asio::steady_timer accept_pause{io};
  std::thread thread;

  void do_accept() {
    acceptor.async_accept([this](error_code ec, tcp::socket socket) {
      if (ec == asio::error::operation_aborted || !acceptor.is_open()) return;
      if (ec) {  // out of descriptors, say: try again shortly rather than spin
        accept_pause.expires_after(std::chrono::milliseconds(100));
        return accept_pause.async_wait([this](error_code) { do_accept(); });
      }
      if (open.load() >= kMaxConnections) {
        error_code ignored;
        socket.close(ignored);
      } else {
        std::make_shared<AdminSession>(std::move(socket), handlers, open)->do_read();
      }
      do_accept();
    });
  }
};

AdminServer::AdminServer(const net::ListenAddress& listen, bool any_address)
    : impl_(std::make_unique<Impl>()) {
  net::listen_on(impl_->acceptor, listen, "--admin-listen");
  if (!impl_->acceptor.local_endpoint().address().is_loopback() && !any_address)
    throw std::runtime_error("--admin-listen " + listen.host + ":" + std::to_string(listen.port) +
                             " is not a loopback address, and the admin endpoint has no "
                             "authentication: add --admin-listen-any to serve it there (e.g. for a "
                             "kubelet's probes), or listen on 127.0.0.1");
}

AdminServer::~AdminServer() { stop(); }

std::string AdminServer::url() const { return net::listening_url(impl_->acceptor); }

void AdminServer::start(AdminHandlers handlers) {
  impl_->handlers = std::move(handlers);
  impl_->do_accept();
  impl_->thread = std::thread([impl = impl_.get()] {
    ::pthread_setname_np(::pthread_self(), "rt-admin");
    net::run_handlers(impl->io, [](std::string_view) {});  // a failed answer costs its connection
  });
}

void AdminServer::stop() {
  if (!impl_->thread.joinable()) return;
  impl_->io.stop();
  impl_->thread.join();
}

UpstreamCheck::UpstreamCheck(net::Url upstream, std::shared_ptr<asio::ssl::context> tls,
                             std::chrono::milliseconds interval, std::chrono::milliseconds timeout)
    : upstream_(std::move(upstream)), tls_(std::move(tls)), interval_(interval), timeout_(timeout) {}

UpstreamCheck::~UpstreamCheck() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void UpstreamCheck::start() {
  thread_ = std::thread([this] {
    ::pthread_setname_np(::pthread_self(), "rt-upcheck");
    run();
  });
}

std::string UpstreamCheck::not_answering() const {
  std::lock_guard lock(mutex_);
  return problem_;
}

void UpstreamCheck::run() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    lock.unlock();
    std::string problem;
    try {
      auto answer = net::fetch(upstream_, tls_, "/health", timeout_, 64u << 10);
      if (answer.status == 0)
        problem = "the upstream does not answer GET /health: " + answer.error;
      else if (answer.status >= 500)
        problem = "the upstream answers GET /health with " + std::to_string(answer.status) +
                  " (" + upstream_.str() + ")";
    } catch (const std::exception& e) {
      problem = std::string("the upstream could not be checked: ") + e.what();
    }
    lock.lock();
    problem_ = std::move(problem);
    wake_.wait_for(lock, interval_, [this] { return stopping_; });
  }
}

}  // namespace retrace::record
