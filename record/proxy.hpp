// Internal to record/: the proxy workers. See record.hpp for the threading picture.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <unordered_map>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include "base/clock.hpp"
#include "net/connection.hpp"
#include "record/record.hpp"
#include "record/sampling.hpp"

namespace retrace::record {

// Exchanges begun and not yet complete, counted by the workers (++ in begin_exchange, -- in
// complete). The control thread waits for zero while draining: after when_zero(), the worker
// whose exchange was the last in flight calls the callback, so the wait is an event, not a poll.
class InFlight {
 public:
  void operator++() { count_.fetch_add(1); }
  void operator--() {
    // Sequentially consistent with when_zero(): either this load sees watching_ set, or the load
    // in the caller of when_zero() sees this decrement; a zero is never missed by both.
    if (count_.fetch_sub(1) == 1 && watching_.load()) on_zero_();
  }
  std::int64_t load() const { return count_.load(); }
  // Once: from now on each decrement to zero calls `on_zero` on the decrementing thread. The
  // count may be zero already: load() after this call to know.
  void when_zero(std::function<void()> on_zero) {
    on_zero_ = std::move(on_zero);
    watching_.store(true);
  }

 private:
  std::atomic<std::int64_t> count_{0};
  std::atomic<bool> watching_{false};
  std::function<void()> on_zero_;  // written once, before watching_ is set
};

// Shared by all workers for the whole run; owned by run_recorder.
struct ProxyShared {
  const RecordOptions& options;
  std::shared_ptr<net::asio::ssl::context> tls;  // null for an http:// upstream
  // Every time the trace records comes from here (tests pass a ManualClock); lives for the run.
  const Clock& clock;
  Clock::time_point run_start;
  // Thread-safe hand-over to the trace thread.
  std::function<void(CapturedExchange&&)> submit;
  // Called from a worker thread once --max-exchanges were captured.
  std::function<void()> on_limit;

  std::atomic<bool> draining{false};
  InFlight in_flight{};
  std::atomic<std::uint64_t> forwarded{0};
  std::atomic<std::uint64_t> captured{0};
  // Exchanges that ended outside the trace, by why (record/metrics.hpp's outcomes).
  std::atomic<std::uint64_t> sampled_out{0};  // not in --sample's fraction
  std::atomic<std::uint64_t> probes{0};       // marked X-Retrace-Probe (net/http_rules.hpp)
  std::atomic<std::uint64_t> excluded{0};     // outside --include-path / --exclude-path
  std::atomic<std::uint64_t> over_limit{0};   // after --max-exchanges were captured
  SessionSampler sampler{1.0, 0};             // set from options before the workers start
};

// Nanoseconds from `from` to `to`: every offset the trace records.
inline std::int64_t ns_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(to - from).count();
}

class ClientSession;

// One proxy thread: an io_context, its upstream pool and its client sessions. Everything but
// io() and the constructor is called on the worker's own thread (post to it).
class Worker {
 public:
  explicit Worker(ProxyShared& shared);
  ~Worker();
  net::asio::io_context& io() { return io_; }
  ProxyShared& shared() { return shared_; }
  net::ConnectionPool& pool() { return pool_; }

  // The worker's loop (net/run_handlers.hpp): `on_exception` hears of a handler that threw.
  void run(const std::function<void(std::string_view what)>& on_exception);
  void start_session(net::tcp::socket socket);
  void forget(std::uint64_t session_id) { sessions_.erase(session_id); }
  // Draining: close client connections that wait for a request; in-flight ones finish.
  void close_idle_sessions();
  // Shutdown deadline: cut every session; in-flight exchanges are recorded as cut.
  void cut_sessions();
  // Last step: drop pooled connections and let run() return once the sessions are gone.
  void finish();
  bool finished() const { return finished_; }

  // The size of the last event stream this worker captured. The next stream's capture reserves
  // about as much, so its body is not copied again on every doubling of its string (a workload's
  // streams are alike in length; a shorter one only leaves room unused until the trace thread is
  // done with it). Worker thread only.
  net::ArrivedSize last_stream;

 private:
  ProxyShared& shared_;
  std::unordered_map<std::uint64_t, std::weak_ptr<ClientSession>> sessions_;
  std::uint64_t next_session_id_ = 0;
  std::atomic<bool> finished_{false};
  // Declared after sessions_: destroying the io_context destroys pending handlers and with them
  // sessions, whose destructors call forget().
  net::asio::io_context io_{1};
  std::optional<net::asio::executor_work_guard<net::asio::io_context::executor_type>> work_;
  // Declared after io_: pooled sockets must close before their io_context goes.
  // Idle age is weighed against the upstream's real keep-alive timeout, so it runs on real time
  // like the other waits, not on the run's (maybe manual) clock.
  net::ConnectionPool pool_{retrace::Clock::system()};
};

}  // namespace retrace::record
