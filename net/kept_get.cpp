#include "net/kept_get.hpp"

#include "net/fetch_exchange.hpp"
#include "net/http_rules.hpp"
#include "version.hpp"

namespace retrace::net {

namespace http = beast::http;

KeptGet::KeptGet(const Url& url, std::shared_ptr<asio::ssl::context> tls, std::string_view path,
                 std::size_t body_limit)
    : url_(url), tls_(std::move(tls)), target_(url.join(path)), body_limit_(body_limit) {}

KeptGet::~KeptGet() {
  if (connection_) connection_->close();
}

Fetched KeptGet::get(std::chrono::steady_clock::duration timeout) {
  bool reused = false;
  auto result = attempt(timeout, reused);
  if (reused && result.status == 0) result = attempt(timeout, reused);  // closed while idle
  return result;
}

Fetched KeptGet::attempt(std::chrono::steady_clock::duration timeout, bool& reused) {
  reused = connection_ && connection_->idle_clean();
  if (!reused) {
    if (connection_) connection_->close();
    connection_ = std::make_unique<UpstreamConnection>(io_.get_executor(), url_, tls_);
    ++connections_;
  }
  http::request<http::string_body> request{http::verb::get, target_, 11};
  request.set(http::field::host, url_.host_header());
  request.set(http::field::user_agent, std::string("retrace/") + kToolVersion);
  request.set(kProbeHeader, kProbeHeaderValue);  // not trace traffic: record keeps it out
  http::response_parser<http::string_body> parser;
  parser.body_limit(body_limit_);

  // The handlers below run inside io_.run(), so every local outlives them.
  Fetched result;
  auto& connection = *connection_;
  bool keep = false;
  auto exchange = [&] {
    detail::start_exchange(connection, request, parser, timeout, url_, result, [&](bool alive) { keep = alive; });
  };
  if (reused) {
    exchange();
  } else {
    connection.async_connect(timeout, [&](error_code ec, Phase phase) {
      if (ec) {
        result.error = describe(ec, phase, url_.str());
        return;
      }
      exchange();
    });
  }
  io_.restart();
  io_.run();
  if (result.status == 0 || !keep) {
    connection_->close();
    connection_.reset();
  } else {
    connection_->expires_never();
    ++connection_->responses;
  }
  return result;
}

}  // namespace retrace::net
