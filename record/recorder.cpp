// run_recorder: wires the trace thread, the proxy workers and the control loop (acceptor, signals,
// timers, status line), and runs the shutdown sequence:
//   stop accepting ─► close idle client connections ─► wait for in-flight exchanges (up to the
//   drain deadline) ─► cut the rest (recorded as cut) ─► stop workers ─► flush and close the trace.
#include <pthread.h>
#include <unistd.h>

#include <array>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <ostream>
#include <thread>

#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>

#include "net/fetch.hpp"
#include "record/proxy.hpp"
#include "version.hpp"

namespace retrace::record {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using net::error_code;
using net::tcp;
using Clock = std::chrono::steady_clock;

namespace {

// The trace thread. Exchanges arrive from any worker through submit(); only this thread touches the
// TraceWriter. A write failure (a full disk) stops the run: later exchanges are counted as lost.
class TraceSink {
 public:
  TraceSink(const std::filesystem::path& path, const TraceHeader& header, WriterOptions options,
            Redactor redactor)
      : writer_(path, header, options), options_(options), redactor_(std::move(redactor)) {}

  ~TraceSink() { close(); }

  void start(std::function<void()> on_failure) {
    on_failure_ = std::move(on_failure);
    thread_ = std::thread([this] {
      ::pthread_setname_np(::pthread_self(), "rt-trace");  // for top -H and perf
      run();
    });
  }

  void submit(CapturedExchange&& captured) {
    {
      std::lock_guard lock(mutex_);
      queue_.push_back(std::move(captured));
    }
    wake_.notify_one();
  }

  // Drains the queue, closes the trace. Idempotent.
  void close() {
    {
      std::lock_guard lock(mutex_);
      closing_ = true;
    }
    wake_.notify_one();
    if (thread_.joinable()) thread_.join();
    if (!writer_closed_) {
      writer_closed_ = true;
      try {
        writer_.close();
      } catch (const std::exception& e) {
        if (error_.empty()) error_ = e.what();
      }
    }
  }

  std::atomic<std::uint64_t> written{0};
  std::atomic<std::uint64_t> tokens{0};
  std::atomic<std::uint64_t> lost{0};
  std::array<std::atomic<std::uint64_t>, 8> errors_by_kind{};
  std::uint64_t bytes() const { return writer_.bytes_written(); }
  const std::string& error() const { return error_; }  // after close()

 private:
  void run() {
    std::deque<CapturedExchange> batch;
    Exchange exchange;
    std::uint64_t next_id = 0;
    bool unflushed = false;
    std::unique_lock lock(mutex_);
    for (;;) {
      auto ready = [&] { return closing_ || !queue_.empty(); };
      if (!ready()) {
        if (unflushed) {
          // Idle with exchanges in an open frame: close it after flush_ms, as the writer would have
          // on its next write.
          if (!wake_.wait_for(lock, std::chrono::milliseconds(std::max<std::int64_t>(options_.flush_ms, 1)), ready)) {
            lock.unlock();
            flush();
            unflushed = false;
            lock.lock();
            continue;
          }
        } else {
          wake_.wait(lock, ready);
        }
      }
      if (queue_.empty() && closing_) break;
      batch.swap(queue_);
      lock.unlock();
      for (auto& captured : batch) {
        if (failed_) {
          ++lost;
          continue;
        }
        finish_exchange(std::move(captured), redactor_, next_id++, exchange);
        try {
          writer_.write(exchange);
          ++written;
          unflushed = true;
        } catch (const std::exception& e) {
          fail(e.what());
          ++lost;
          continue;
        }
        ++errors_by_kind[static_cast<std::size_t>(exchange.error.kind) % errors_by_kind.size()];
        std::uint64_t count = 0;
        for (const auto& choice : exchange.choices) count += choice.tokens.size();
        tokens += count;
      }
      batch.clear();
      lock.lock();
    }
    lock.unlock();
    if (unflushed) flush();
  }

  void flush() {
    if (failed_) return;
    try {
      writer_.flush();
    } catch (const std::exception& e) {
      fail(e.what());
    }
  }

  void fail(const std::string& message) {
    failed_ = true;
    error_ = message;
    if (on_failure_) on_failure_();
  }

  TraceWriter writer_;
  WriterOptions options_;
  Redactor redactor_;
  std::function<void()> on_failure_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<CapturedExchange> queue_;  // guarded by mutex_
  bool closing_ = false;                // guarded by mutex_
  bool failed_ = false;                 // trace thread only (then read after join)
  bool writer_closed_ = false;
  std::string error_;
  std::thread thread_;
};

std::string host_name() {
  std::array<char, 256> name{};
  if (::gethostname(name.data(), name.size() - 1) != 0) return "";
  return name.data();
}

// GET /v1/models, best effort: what the upstream says about itself goes into the trace header.
std::string fetch_server_info(const RecordOptions& options,
                              const std::shared_ptr<asio::ssl::context>& tls) {
  boost::json::object info;
  info["endpoint"] = options.upstream.join("/v1/models");
  auto timeout = std::min<Clock::duration>(options.upstream_timeout, std::chrono::seconds(3));
  auto response = net::fetch(options.upstream, tls, "/v1/models", timeout, 1u << 20);
  if (!response.error.empty()) {
    info["error"] = response.error;
    return boost::json::serialize(info);
  }
  info["status"] = response.status;
  if (!response.server.empty()) info["server"] = response.server;
  error_code parse_error;
  auto models = boost::json::parse(response.body, parse_error);
  if (!parse_error)
    info["models"] = std::move(models);
  else
    info["body"] = response.body.substr(0, 4096);
  return boost::json::serialize(info);
}

}  // namespace

RecordSummary run_recorder(const RecordOptions& options,
                           const std::function<void(const std::string&)>& on_listening,
                           std::ostream& log) {
  std::shared_ptr<asio::ssl::context> tls;
  if (options.upstream.tls()) tls = net::make_client_tls_context(options.tls);

  TraceHeader header;
  header.tool_version = kToolVersion;
  header.created_unix_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count();
  header.source = Source::recorded;
  header.target = options.upstream.str();
  header.settings = settings_json(options);
  header.host = host_name();
  if (options.fetch_server_info) header.server_info = fetch_server_info(options, tls);

  asio::io_context control{1};
  tcp::acceptor acceptor(control);
  {
    error_code ec;
    auto address = asio::ip::make_address(options.listen.host, ec);
    if (ec)
      throw std::runtime_error("--listen host '" + options.listen.host +
                               "' is not an IP address: use e.g. 127.0.0.1:8080");
    tcp::endpoint endpoint(address, options.listen.port);
    acceptor.open(endpoint.protocol());
    acceptor.set_option(asio::socket_base::reuse_address(true));
    acceptor.bind(endpoint, ec);
    if (ec)
      throw std::runtime_error("cannot listen on " + options.listen.host + ":" +
                               std::to_string(options.listen.port) + ": " + ec.message() +
                               " (try another --listen port; port 0 picks a free one)");
    acceptor.listen(asio::socket_base::max_listen_connections);
  }

  // Writes the header at once: an unwritable --out fails here, before any traffic.
  TraceSink sink(options.out, header, options.writer,
                 Redactor(options.keep_secrets, options.redact_headers));

  ProxyShared shared{options, tls, Clock::now(), {}, {}};
  shared.submit = [&](CapturedExchange&& captured) { sink.submit(std::move(captured)); };

  unsigned thread_count = options.threads;
  if (thread_count == 0) thread_count = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::unique_ptr<Worker>> workers;
  for (unsigned i = 0; i < thread_count; ++i) workers.push_back(std::make_unique<Worker>(shared));

  // ---- shutdown sequence, on the control thread ----
  bool shutting_down = false;
  bool cut_sent = false;
  bool stopped = false;  // once set, no handler re-arms: control.run() returns when all are done
  std::string stop_reason;
  Clock::time_point drain_deadline{};
  Clock::time_point cut_deadline{};
  asio::steady_timer drain_timer(control);
  asio::steady_timer status_timer(control);
  asio::steady_timer duration_timer(control);
  asio::signal_set signals(control, SIGINT, SIGTERM);

  auto stop_workers = [&] {
    stopped = true;
    for (auto& worker : workers) asio::post(worker->io(), [w = worker.get()] { w->finish(); });
    status_timer.cancel();
    duration_timer.cancel();
    signals.cancel();
    drain_timer.cancel();
  };
  auto cut_everything = [&] {
    cut_sent = true;
    cut_deadline = Clock::now() + std::chrono::seconds(2);
    for (auto& worker : workers) asio::post(worker->io(), [w = worker.get()] { w->cut_sessions(); });
  };
  std::function<void()> poll_drain = [&] {
    if (stopped) return;
    auto now = Clock::now();
    if (shared.in_flight == 0 || (cut_sent && now >= cut_deadline)) return stop_workers();
    if (!cut_sent && now >= drain_deadline) {
      if (shared.in_flight > 0)
        log << "retrace record: " << shared.in_flight
            << " exchange(s) still in flight at the drain deadline; recording them as cut\n";
      cut_everything();
    }
    drain_timer.expires_after(std::chrono::milliseconds(5));
    drain_timer.async_wait([&](error_code ec) {
      if (!ec) poll_drain();
    });
  };
  auto begin_shutdown = [&](const std::string& reason) {
    if (shutting_down) return;
    shutting_down = true;
    stop_reason = reason;
    error_code ignored;
    acceptor.close(ignored);
    shared.draining = true;
    for (auto& worker : workers)
      asio::post(worker->io(), [w = worker.get()] { w->close_idle_sessions(); });
    drain_deadline = Clock::now() + options.drain_timeout;
    poll_drain();
  };

  std::function<void(int)> on_signal;
  std::function<void()> wait_signal = [&] {
    signals.async_wait([&](error_code ec, int number) {
      if (ec) return;
      on_signal(number);
    });
  };
  on_signal = [&](int number) {
    if (shutting_down && !cut_sent) {
      log << "retrace record: second signal, cutting in-flight exchanges now\n";
      cut_everything();
    }
    begin_shutdown(number == SIGINT ? "interrupted" : "terminated");
    if (!stopped) wait_signal();
  };
  wait_signal();

  shared.on_limit = [&] {
    asio::post(control, [&] { begin_shutdown("--max-exchanges reached"); });
  };
  sink.start([&] { asio::post(control, [&] { begin_shutdown("trace write failed"); }); });

  if (options.duration.count() > 0) {
    duration_timer.expires_after(options.duration);
    duration_timer.async_wait([&](error_code ec) {
      if (!ec) begin_shutdown("--duration elapsed");
    });
  }

  // Sockets are accepted on the control thread straight onto a worker's io_context, round robin.
  std::size_t next_worker = 0;
  std::function<void()> do_accept = [&] {
    auto& worker = *workers[next_worker];
    next_worker = (next_worker + 1) % workers.size();
    acceptor.async_accept(worker.io(), [&, w = &worker](error_code ec, tcp::socket socket) {
      if (ec == asio::error::operation_aborted || !acceptor.is_open()) return;
      if (!ec)
        asio::post(w->io(), [w, s = std::move(socket)]() mutable { w->start_session(std::move(s)); });
      else
        log << "retrace record: accept failed: " << ec.message() << "\n";
      do_accept();
    });
  };
  do_accept();

  std::function<void()> show_status;
  auto last_tokens = std::uint64_t{0};
  auto last_time = Clock::now();
  show_status = [&] {
    if (stopped) return;
    auto now = Clock::now();
    double seconds = std::chrono::duration<double>(now - last_time).count();
    std::uint64_t tokens = sink.tokens;
    std::uint64_t errors = 0;
    for (std::size_t kind = 1; kind < sink.errors_by_kind.size(); ++kind)
      errors += sink.errors_by_kind[kind];
    log << "\r\033[Krecording: " << sink.written << " exchanges, " << errors << " errors, "
        << static_cast<std::uint64_t>(seconds > 0 ? (tokens - last_tokens) / seconds : 0)
        << " tokens/s, " << shared.in_flight << " in flight" << std::flush;
    last_tokens = tokens;
    last_time = now;
    status_timer.expires_after(std::chrono::milliseconds(500));
    status_timer.async_wait([&](error_code ec) {
      if (!ec) show_status();
    });
  };
  if (options.live_status) show_status();

  std::vector<std::thread> threads;
  for (auto& worker : workers)
    threads.emplace_back([w = worker.get()] {
      ::pthread_setname_np(::pthread_self(), "rt-proxy");
      w->run();
    });

  auto local = acceptor.local_endpoint();
  std::string host = local.address().is_v6() ? "[" + local.address().to_string() + "]"
                                             : local.address().to_string();
  on_listening("http://" + host + ":" + std::to_string(local.port()));

  control.run();
  if (options.live_status) log << "\r\033[K" << std::flush;

  // Workers return from run() once finish() closed everything; a stuck one is stopped.
  auto give_up_at = Clock::now() + std::chrono::seconds(3);
  for (auto& worker : workers)
    while (!worker->finished() && Clock::now() < give_up_at)
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
  for (auto& worker : workers)
    if (!worker->finished()) worker->io().stop();
  for (auto& thread : threads) thread.join();

  sink.close();
  RecordSummary summary;
  summary.exchanges = sink.written;
  summary.forwarded = shared.forwarded;
  for (std::size_t kind = 0; kind < summary.errors_by_kind.size(); ++kind)
    summary.errors_by_kind[kind] = sink.errors_by_kind[kind];
  summary.tokens = sink.tokens;
  summary.lost = sink.lost;
  summary.trace_bytes = sink.bytes();
  summary.write_error = sink.error();
  summary.stop_reason = stop_reason;
  return summary;
}

}  // namespace retrace::record
