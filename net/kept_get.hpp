// One page asked for again and again (the /metrics a run scrapes) on one kept-alive connection:
// connected once, reconnected when the server closed it, the request built once. On an
// io_context of its own (io()): get() blocks, running it; async_get() starts a GET whose handler
// runs inside the owner's run of io() (the scrape loop runs it as its caller's sleep), one GET at
// a time, from io()'s thread only. Every request carries
// X-Retrace-Probe: 1 (net/http_rules.hpp), as fetch()'s do. What net::fetch costs a GET
// (an io_context, a resolve, a connect, for https a handshake) is paid once here, not per GET.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

#include "net/connection.hpp"
#include "net/fetch.hpp"

namespace retrace::net {

class KeptGet {
 public:
  // `tls` must be non-null for an https:// url. `io`: run the GETs on the caller's io_context
  // (async_get only; it outlives this) instead of one of its own.
  KeptGet(const Url& url, std::shared_ptr<asio::ssl::context> tls, std::string_view path,
          std::size_t body_limit, asio::io_context* io = nullptr);
  KeptGet(const KeptGet&) = delete;
  KeptGet& operator=(const KeptGet&) = delete;
  ~KeptGet();

  // GET the page: on the kept connection when it is still open and clean, else on a new one
  // (connecting within `timeout`); then writing and reading within `timeout`. A reused connection
  // that fails before any byte of the answer arrived is retried once on a new one (the server
  // may have closed it while idle). The body is moved into the result.
  Fetched get(std::chrono::steady_clock::duration timeout);
  // The same, its result handed to `done` inside a run of io(). Nothing else may be using io()
  // when get() is called (it runs io() until no work is left).
  void async_get(std::chrono::steady_clock::duration timeout, std::function<void(Fetched)> done);
  asio::io_context& io() { return io_; }
  // How many connections get() has opened (1 while the server keeps the connection alive).
  std::size_t connections() const { return connections_; }

 private:
  struct Pending;
  void attempt(std::shared_ptr<Pending> pending);
  void finish(const std::shared_ptr<Pending>& pending);

  Url url_;
  std::shared_ptr<asio::ssl::context> tls_;
  std::string target_;
  std::size_t body_limit_;
  beast::http::request<beast::http::string_body> request_;  // built once: one GET at a time
  std::unique_ptr<asio::io_context> own_io_;  // null when running on the caller's
  asio::io_context& io_;
  std::unique_ptr<UpstreamConnection> connection_;
  std::size_t connections_ = 0;
};

}  // namespace retrace::net
