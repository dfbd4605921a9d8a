#include "net/kept_get.hpp"

#include "net/fetch_exchange.hpp"
#include "net/http_rules.hpp"
#include "version.hpp"

namespace retrace::net {

namespace http = beast::http;

// One GET's state, alive until its handler has run (the handlers below hold it).
struct KeptGet::Pending {
  http::response_parser<http::string_body> parser;
  Fetched result;
  bool keep = false;
  bool reused = false;
  bool retried = false;
  std::chrono::steady_clock::duration timeout{};
  std::function<void(Fetched)> done;
};

KeptGet::KeptGet(const Url& url, std::shared_ptr<asio::ssl::context> tls, std::string_view path,
                 std::size_t body_limit, asio::io_context* io)
    : url_(url), tls_(std::move(tls)), target_(url.join(path)), body_limit_(body_limit),
      own_io_(io ? nullptr : std::make_unique<asio::io_context>(1)), io_(io ? *io : *own_io_) {
  request_.method(http::verb::get);
  request_.target(target_);
  request_.version(11);
  request_.set(http::field::host, url_.host_header());
  request_.set(http::field::user_agent, std::string("retrace/") + kToolVersion);
  request_.set(kProbeHeader, kProbeHeaderValue);  // not trace traffic: record keeps it out
}

KeptGet::~KeptGet() {
  if (connection_) connection_->close();
}

Fetched KeptGet::get(std::chrono::steady_clock::duration timeout) {
  Fetched out;
  async_get(timeout, [&out](Fetched fetched) { out = std::move(fetched); });
  io_.restart();
  io_.run();
  return out;
}

void KeptGet::async_get(std::chrono::steady_clock::duration timeout, std::function<void(Fetched)> done) {
  auto pending = std::make_shared<Pending>();
  pending->timeout = timeout;
  pending->done = std::move(done);
  attempt(std::move(pending));
}

void KeptGet::attempt(std::shared_ptr<Pending> pending) {
  pending->reused = connection_ && connection_->idle_clean();
  if (!pending->reused) {
    if (connection_) connection_->close();
    connection_ = std::make_unique<UpstreamConnection>(io_.get_executor(), url_, tls_);
    ++connections_;
  }
  pending->parser.body_limit(body_limit_);
  auto exchange = [this, pending] {
    detail::start_exchange(*connection_, request_, pending->parser, pending->timeout, url_,
                           pending->result, [this, pending](bool alive) {
                             pending->keep = alive;
                             // Outside the connection's own handler: finish may close and free it.
                             asio::post(io_, [this, pending] { finish(pending); });
                           });
  };
  if (pending->reused) {
    exchange();
  } else {
    connection_->async_connect(pending->timeout, [this, pending, exchange](error_code ec, Phase phase) {
      if (ec) {
        pending->result.error = describe(ec, phase, url_.str());
        return finish(pending);
      }
      exchange();
    });
  }
}

// Every attempt ends here once, with its answer or its error (result.status 0).
void KeptGet::finish(const std::shared_ptr<Pending>& pending) {
  if (pending->result.status == 0 || !pending->keep) {
    if (connection_) connection_->close();
    connection_.reset();
  } else {
    connection_->expires_never();
    ++connection_->responses;
  }
  if (pending->result.status == 0 && pending->reused && !pending->retried) {  // closed while idle
    auto again = std::make_shared<Pending>();
    again->timeout = pending->timeout;
    again->done = std::move(pending->done);
    again->retried = true;
    return attempt(std::move(again));
  }
  auto done = std::move(pending->done);
  done(std::move(pending->result));
}

}  // namespace retrace::net
