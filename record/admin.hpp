// Record's admin endpoint (--admin-listen HOST:PORT, off by default): what a platform's probes and
// scrapers ask of a long-running record, on a listener of its own, never the proxied port.
//   GET /healthz   200 "ok" while the process serves (liveness).
//   GET /readyz    200 "ready" while the upstream answers and the trace is writable; else 503 with
//                  the reason in the body (readiness: the upstream down, a failed trace write,
//                  record stopping).
//   GET /metrics   record's counters in Prometheus' text format (record/metrics.hpp).
// Anything else is 404, a method other than GET or HEAD 405, a request that does not parse 400;
// each then closes the connection. Loopback only unless the user says otherwise
// (--admin-listen-any): it has no authentication.
//
// Threads: one admin thread runs the listener and its connections on an io_context of its own,
// so a slow scraper never holds a proxy worker; what it serves it reads from atomics (no lock on
// the relay). The upstream is checked by UpstreamCheck's own thread, at most once a second,
// whatever the number of /readyz requests.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include <boost/asio/ssl/context.hpp>

#include "net/url.hpp"

namespace retrace::record {

struct AdminHandlers {
  std::function<std::string()> metrics;    // the /metrics text
  std::function<std::string()> not_ready;  // "" when ready, else why not (for /readyz's 503)
};

class AdminServer {
 public:
  // Binds at once (throws std::runtime_error naming the address and what to try): a non-loopback
  // address is refused unless `any_address`.
  AdminServer(const net::ListenAddress& listen, bool any_address);
  ~AdminServer();  // stops and joins the admin thread
  AdminServer(const AdminServer&) = delete;
  AdminServer& operator=(const AdminServer&) = delete;

  std::string url() const;  // http://HOST:PORT, the port bound
  void start(AdminHandlers handlers);  // the admin thread; what the handlers read must outlive stop()
  void stop();              // idempotent

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The upstream's readiness, checked on a thread of its own: GET /health (vLLM, SGLang, llama.cpp
// and retrace serve answer it) every `interval`, each check bounded by `timeout`. The upstream
// answers when any response below 500 arrives (a server without /health answers 404: it is up).
class UpstreamCheck {
 public:
  UpstreamCheck(net::Url upstream, std::shared_ptr<boost::asio::ssl::context> tls,
                std::chrono::milliseconds interval, std::chrono::milliseconds timeout);
  ~UpstreamCheck();  // stops and joins
  void start();
  // "" while the last check got an answer; else why not ("not checked yet" before the first).
  std::string not_answering() const;

 private:
  void run();
  net::Url upstream_;
  std::shared_ptr<boost::asio::ssl::context> tls_;
  std::chrono::milliseconds interval_, timeout_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;  // guarded by mutex_
  std::string problem_ = "the upstream has not been checked yet";  // guarded by mutex_
  std::thread thread_;
};

}  // namespace retrace::record
