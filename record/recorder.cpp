// run_recorder wires the trace thread (trace_sink.hpp), the proxy workers (proxy.hpp) and the
// control thread, which is the Controller below: it accepts connections onto the workers, draws
// the status line, takes the stop requests (SIGINT/SIGTERM, --duration, --max-exchanges, a trace
// write failure) and runs the shutdown sequence:
//   stop accepting ─► close idle client connections ─► wait for in-flight exchanges (up to the
//   drain deadline) ─► cut the rest (recorded as cut) ─► stop workers ─► flush and close the trace.
// Every wait in it is for an event: the worker whose exchange was the last in flight posts
// on_drained, each worker thread posts on_worker_finished as it ends. Timers are deadlines (drain,
// cut, give up on a stuck worker), never polls.
//
// Signals: the first stops the run (drain); one during the drain cuts the exchanges in flight at
// once; after that, when only stopping and flushing are left, the next one ends the process.
#include <pthread.h>

#include <csignal>
#include <optional>
#include <ostream>
#include <thread>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>

#include "base/malloc_policy.hpp"
#include "format/header.hpp"
#include "net/accept_backoff.hpp"
#include "net/fetch.hpp"
#include "net/listener.hpp"
#include "net/scrape.hpp"
#include "base/stop_signals.hpp"
#include "record/admin.hpp"
#include "record/metrics.hpp"
#include "record/proxy.hpp"
#include "record/trace_sink.hpp"
#include "version.hpp"

namespace retrace::record {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using net::error_code;
using net::tcp;

namespace {

// GET /v1/models, best effort: what the upstream says about itself goes into the trace header.
std::string fetch_server_info(const RecordOptions& options,
                              const std::shared_ptr<asio::ssl::context>& tls) {
  boost::json::object info;
  info["endpoint"] = options.upstream.join("/v1/models");
  auto timeout = std::min<std::chrono::steady_clock::duration>(options.upstream_timeout,
                                                               std::chrono::seconds(3));
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

// What the workers have relayed so far (any thread).
RecordProgress progress(const ProxyShared& shared) {
  return {shared.forwarded.load(std::memory_order_relaxed), shared.sampled_out.load(std::memory_order_relaxed),
          shared.probes.load(std::memory_order_relaxed), shared.excluded.load(std::memory_order_relaxed)};
}

// What the admin endpoint serves (record/admin.hpp, record/metrics.hpp): read from the atomics
// the workers and the trace thread keep, on the admin thread.
AdminHandlers admin_handlers(const ProxyShared& shared, const TraceSink& sink,
                             const UpstreamCheck& upstream) {
  AdminHandlers handlers;
  handlers.metrics = [&shared, &sink] {
    RecordCounters counters;
    for (std::size_t kind = 0; kind < counters.written_by_kind.size(); ++kind)
      counters.written_by_kind[kind] = sink.errors_by_kind[kind].load(std::memory_order_relaxed);
    counters.sampled_out = shared.sampled_out.load(std::memory_order_relaxed);
    counters.probes = shared.probes.load(std::memory_order_relaxed);
    counters.excluded = shared.excluded.load(std::memory_order_relaxed);
    counters.over_limit = shared.over_limit.load(std::memory_order_relaxed);
    counters.lost = sink.lost.load(std::memory_order_relaxed);
    counters.bytes_written = sink.bytes_written.load(std::memory_order_relaxed);
    counters.segments = segment_counts(sink);
    counters.in_flight = shared.in_flight.load();
    auto since = sink.unflushed_since_ns.load(std::memory_order_relaxed);
    if (since != 0) {
      auto now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                     std::chrono::steady_clock::now().time_since_epoch()).count();
      counters.flush_lag_seconds = std::max<std::int64_t>(now - since, 0) / 1e9;
    }
    auto text = metrics_text(counters);
    if (shared.options.extra_metrics) text += shared.options.extra_metrics();
    return text;
  };
  handlers.not_ready = [&shared, &sink, &upstream]() -> std::string {
    if (sink.write_failed) return "the trace cannot be written (a write failed; record's log says why)";
    if (shared.draining) return "record is stopping";
    return upstream.not_answering();
  };
  return handlers;
}

// Binds --listen before the trace is created, so a taken port leaves no empty trace behind.
tcp::acceptor open_listener(asio::io_context& io, const net::ListenAddress& listen) {
  tcp::acceptor acceptor(io);
  net::listen_on(acceptor, listen, "--listen");
  return acceptor;
}

// The control thread. Every member function but the constructor, start() and run() runs on it;
// other threads post to it (workers, the trace thread, the signal watcher).
class Controller {
 public:
  Controller(asio::io_context& control, tcp::acceptor& acceptor, ProxyShared& shared,
             TraceSink& sink, std::ostream& log, net::Scraper* scraper)
      : control_(control),
        scraper_(scraper),
        acceptor_(acceptor),
        shared_(shared),
        options_(shared.options),
        sink_(sink),
        log_(log),
        signals_([this](int number) { post([this, number] { on_signal(number); }); },
                 sink.segmented()) {
    unsigned count = options_.threads;
    if (count == 0) count = std::max(1u, std::thread::hardware_concurrency());
    for (unsigned i = 0; i < count; ++i) workers_.push_back(std::make_unique<Worker>(shared_));
  }

  // Only reached with threads still running when run() was never called or threw.
  ~Controller() {
    for (auto& worker : workers_) worker->io().stop();
    for (auto& thread : threads_)
      if (thread.joinable()) thread.join();
  }

  // Starts the worker threads, accepting, and the stop requests that are not signals.
  void start() {
    shared_.on_limit = [this] { post([this] { begin_shutdown("--max-exchanges reached"); }); };
    // The trace thread may outlive this object (the sink closes after it), so it posts straight to
    // control_; what it posts runs only inside run().
    // Segment events (rotations, deletions) are logged here, on the control thread, between
    // status lines; run_recorder prints those posted after the control thread ended.
    sink_.set_note([&control = control_, &log = log_](const std::string& line) {
      asio::post(control, [&log, line] { log << "\r\033[Kretrace record: " << line << std::endl; });
    });
    sink_.start([this, &control = control_] {
      asio::post(control, [this] { begin_shutdown("trace write failed"); });
    });
    for (auto& worker : workers_)
      threads_.emplace_back([this, w = worker.get()] {
        ::pthread_setname_np(::pthread_self(), "rt-proxy");
        w->run([this](std::string_view what) {
          post([this, text = std::string(what)] {
            log_ << "retrace record: internal error in a proxy handler (" << text
                 << "); that exchange was recorded as failed and recording goes on" << std::endl;
          });
        });
        post([this] { on_worker_finished(); });
      });
    workers_running_ = workers_.size();
    if (scraper_) scraper_->begin_async(shared_.run_start);  // the baseline, then every interval
    do_accept();
    if (options_.duration.count() > 0) {
      duration_timer_.expires_after(options_.duration);
      duration_timer_.async_wait([this](error_code ec) {
        if (!ec) begin_shutdown("--duration elapsed");
      });
    }
    if (options_.on_started)
      options_.on_started(RunningProxy{
          [this](const std::string& reason) { post([this, reason] { begin_shutdown(reason); }); },
          [this] { return progress(shared_); }});
    if (options_.live_status) {
      last_status_ = shared_.clock.now();
      do_status();
    }
  }

  // Runs the control thread until every worker has stopped; returns why the run stopped.
  std::string run() {
    control_.run();
    if (options_.live_status) log_ << "\r\033[K" << std::flush;
    for (auto& thread : threads_) thread.join();
    return stop_reason_;
  }

 private:
  enum class Stage { running, draining, cutting, stopping };

  template <class Step>
  void post(Step step) {
    asio::post(control_, std::move(step));
  }

  // ---- running -------------------------------------------------------------------------------

  // Sockets are accepted straight onto a worker's io_context, round robin.
  void do_accept() {
    auto& worker = *workers_[next_worker_];
    next_worker_ = (next_worker_ + 1) % workers_.size();
    acceptor_.async_accept(worker.io(), [this, w = &worker](error_code ec, tcp::socket socket) {
      on_accept(*w, ec, std::move(socket));
    });
  }

  void on_accept(Worker& worker, error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted || stage_ != Stage::running) return;
    if (ec)
      return accept_backoff_.failed(ec, [this] {
        if (stage_ == Stage::running) do_accept();
      });
    accept_backoff_.succeeded();
    asio::post(worker.io(), [w = &worker, s = std::move(socket)]() mutable {
      w->start_session(std::move(s));
    });
    do_accept();
  }

  void do_status() {
    auto now = shared_.clock.now();
    double seconds = std::chrono::duration<double>(now - last_status_).count();
    std::uint64_t tokens = sink_.tokens;
    std::uint64_t errors = 0;
    for (std::size_t kind = 1; kind < sink_.errors_by_kind.size(); ++kind)
      errors += sink_.errors_by_kind[kind];
    log_ << "\r\033[Krecording: " << sink_.written << " exchanges, " << errors << " errors, "
         << static_cast<std::uint64_t>(seconds > 0 ? (tokens - last_tokens_) / seconds : 0)
         << " tokens/s, " << shared_.in_flight.load() << " in flight" << std::flush;
    last_tokens_ = tokens;
    last_status_ = now;
    status_timer_.expires_after(std::chrono::milliseconds(500));
    status_timer_.async_wait([this](error_code ec) {
      if (!ec && stage_ != Stage::stopping) do_status();
    });
  }

  void on_signal(int number) {
    if (number == SIGHUP) {
      // logrotate's habit: close the current segment and open the next (segments only).
      if (stage_ != Stage::stopping) sink_.request_rotation();
      return;
    }
    auto in_flight = shared_.in_flight.load();
    if (stage_ == Stage::running) {
      if (in_flight > 0)
        log_ << "retrace record: stopping: letting " << in_flight
             << " exchange(s) in flight finish, for up to --drain-timeout "
             << options_.drain_timeout.count() / 1000.0 << " s (Ctrl-C again to cut them now)\n";
      return begin_shutdown(number == SIGINT ? "interrupted" : "terminated");
    }
    if (stage_ == Stage::draining) {
      log_ << "retrace record: cutting " << in_flight
           << " exchange(s) in flight now (Ctrl-C again to quit at once)\n";
      do_cut();
    }
    // Cutting or stopping: quit_on_next() took the signals away; this one was already queued.
  }

  // ---- shutdown ------------------------------------------------------------------------------

  void begin_shutdown(const std::string& reason) {
    if (stage_ != Stage::running) return;
    stage_ = Stage::draining;
    stop_reason_ = reason;
    error_code ignored;
    acceptor_.close(ignored);
    accept_backoff_.cancel();
    duration_timer_.cancel();
    shared_.draining = true;
    shared_.in_flight.when_zero([this] { post([this] { on_drained(); }); });
    idle_close_pending_ = workers_.size();
    for (auto& worker : workers_)
      asio::post(worker->io(), [this, w = worker.get()] {
        w->close_idle_sessions();
        post([this] { on_idle_closed(); });
      });
    deadline_.expires_after(options_.drain_timeout);
    deadline_.async_wait([this](error_code ec) { on_drain_deadline(ec); });
  }

  // A request read before a worker closed its idle connections may still begin an exchange:
  // the count is trusted only once every worker has closed them.
  void on_idle_closed() {
    if (--idle_close_pending_ == 0) on_drained();
  }

  // Posted when the in-flight count reached zero; it may have risen again since.
  void on_drained() {
    if (stage_ != Stage::draining && stage_ != Stage::cutting) return;
    if (idle_close_pending_ > 0 || shared_.in_flight.load() > 0) return;
    do_stop();
  }

  void on_drain_deadline(error_code ec) {
    if (ec || stage_ != Stage::draining) return;
    log_ << "retrace record: " << shared_.in_flight.load()
         << " exchange(s) still in flight at the drain deadline; recording them as cut\n";
    do_cut();
  }

  // Cut sessions complete their exchange as cut at once; the deadline covers one that does not.
  void do_cut() {
    stage_ = Stage::cutting;
    signals_.quit_on_next();
    for (auto& worker : workers_) asio::post(worker->io(), [w = worker.get()] { w->cut_sessions(); });
    deadline_.expires_after(kCutDeadline);
    deadline_.async_wait([this](error_code ec) {
      if (!ec && stage_ == Stage::cutting) do_stop();
    });
  }

  void do_stop() {
    stage_ = Stage::stopping;
    signals_.quit_on_next();
    if (scraper_) scraper_->end_async([] {});  // the sample after the last exchange; run() waits for it
    status_timer_.cancel();
    duration_timer_.cancel();
    for (auto& worker : workers_) asio::post(worker->io(), [w = worker.get()] { w->finish(); });
    deadline_.expires_after(kGiveUpDeadline);
    deadline_.async_wait([this](error_code ec) { on_give_up_deadline(ec); });
  }

  // Posted by each worker thread as its run() returns (finish() let it run out of work).
  void on_worker_finished() {
    if (--workers_running_ == 0) deadline_.cancel();  // nothing is left: control_.run() returns
  }

  void on_give_up_deadline(error_code ec) {
    if (ec) return;
    log_ << "retrace record: " << workers_running_ << " proxy worker(s) did not stop within "
         << kGiveUpDeadline.count() << " s; stopping them\n";
    for (auto& worker : workers_)
      if (!worker->finished()) worker->io().stop();
  }

  static constexpr auto kCutDeadline = std::chrono::seconds(2);
  static constexpr auto kGiveUpDeadline = std::chrono::seconds(3);

  asio::io_context& control_;
  net::Scraper* scraper_;  // null: the upstream is not scraped
  tcp::acceptor& acceptor_;
  ProxyShared& shared_;
  const RecordOptions& options_;
  TraceSink& sink_;
  std::ostream& log_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<std::thread> threads_;  // one per worker, joined in run()
  std::size_t next_worker_ = 0;
  Stage stage_ = Stage::running;
  std::string stop_reason_;
  std::size_t idle_close_pending_ = 0;  // workers yet to close their idle connections
  std::size_t workers_running_ = 0;
  asio::steady_timer deadline_{control_};  // of the current shutdown stage
  asio::steady_timer duration_timer_{control_};
  asio::steady_timer status_timer_{control_};
  net::AcceptBackoff accept_backoff_{control_.get_executor(), "retrace record", log_};
  std::uint64_t last_tokens_ = 0;
  Clock::time_point last_status_{};
  // Last member, so destroyed first: its thread posts to control_ and reads `this` until joined.
  net::StopSignals signals_;
};

}  // namespace

RecordSummary run_recorder(const RecordOptions& options,
                           const std::function<void(const std::string&)>& on_listening,
                           std::ostream& log, const Clock& clock) {
  // Freed long exchanges (the trace thread's decoded events) given back, not kept by a threshold
  // risen to the largest: 0-17 MiB less resident, depending on timing, at -c 64 with 16k tokens. Not
  // the one-arena cap replay sets: record's threads live as long as it does, and one arena kept
  // ~35 MiB more resident (bench/RESULTS.md, "record under replay's malloc policy").
  use_fixed_mmap_threshold();
  std::shared_ptr<asio::ssl::context> tls;
  if (options.upstream.tls()) tls = net::make_client_tls_context(options.tls);

  TraceHeader header = new_trace_header(Source::recorded, kToolVersion, options.upstream.str(),
                                        settings_json(options), clock);
  if (options.fetch_server_info) header.server_info = fetch_server_info(options, tls);

  asio::io_context control{1};
  auto acceptor = open_listener(control, options.listen);
  // Bound before the trace too; it starts once what it reads exists.
  std::optional<AdminServer> admin;
  if (options.admin_listen) admin.emplace(*options.admin_listen, options.admin_listen_any);
  // Before the sink, whose thread takes its scrapes until it closes. Its scrapes run on the
  // control thread, as `proxied` is set, before the controller starts them.
  const InFlight* proxied = nullptr;
  std::optional<net::Scraper> scraper;
  auto in_flight = [&proxied] { return proxied ? static_cast<std::int32_t>(proxied->load()) : -1; };
  if (options.scrape.enabled)
    scraper.emplace(options.scrape, options.upstream, tls, clock, in_flight,
                    [&log](std::string_view line) { log << "retrace record: " << line << std::endl; }, &control);
  // Writes the header at once: an unwritable --out fails here, before any traffic.
  TraceSink sink(options.out, header, options.writer, options.segments, clock,
                 [&log](const std::string& line) { log << "retrace record: " << line << std::endl; },
                 Redactor(options.keep_secrets, options.redact_headers));
  sink.max_response_bytes = options.max_response_bytes;
  sink.on_written = options.on_written;
  if (scraper) sink.scrapes = [&scraper] { return scraper->take(); };
  ProxyShared shared{options, tls, clock, clock.now(), {}, {}};
  shared.sampler = SessionSampler(options.sample, options.seed);
  proxied = &shared.in_flight;
  shared.submit = [&](CapturedExchange&& captured) { sink.submit(std::move(captured)); };

  std::optional<UpstreamCheck> upstream_check;
  if (admin) {
    upstream_check.emplace(options.upstream, tls, std::chrono::seconds(1),
                           std::min<std::chrono::milliseconds>(options.upstream_timeout, std::chrono::seconds(1)));
    upstream_check->start();
    admin->start(admin_handlers(shared, sink, *upstream_check));
  }
  // Stops the admin thread before what its handlers read goes, however this function ends.
  struct StopAdmin {
    std::optional<AdminServer>& admin;
    ~StopAdmin() {
      if (admin) admin->stop();
    }
  } stop_admin{admin};
  if (admin) {
    if (options.on_admin_listening) options.on_admin_listening(admin->url());
  }

  Controller controller(control, acceptor, shared, sink, log, scraper ? &*scraper : nullptr);
  // Tells a command built on the proxy that its RunningProxy goes, however this function ends.
  struct Stopping {
    const std::function<void()>& hook;
    ~Stopping() {
      if (hook) hook();
    }
  } stopping{options.on_stopping};
  controller.start();
  on_listening(net::listening_url(acceptor));
  auto stop_reason = controller.run();

  sink.close();
  if (admin) admin->stop();
  control.restart();
  control.poll();  // segment events the trace thread posted after the control thread ended
  RecordSummary summary;
  const auto& segments = sink.segment_counters();
  summary.segmented = sink.segmented();
  summary.segments_opened = segments.segments_opened;
  summary.segments_deleted = segments.segments_deleted;
  summary.bytes_deleted = segments.bytes_deleted;
  summary.exchanges = sink.written;
  auto relayed = progress(shared);
  summary.forwarded = relayed.forwarded;
  summary.sampled_out = relayed.sampled_out;
  summary.probes = relayed.probes;
  summary.excluded = relayed.excluded;
  for (std::size_t kind = 0; kind < summary.errors_by_kind.size(); ++kind)
    summary.errors_by_kind[kind] = sink.errors_by_kind[kind];
  summary.tokens = sink.tokens;
  summary.lost = sink.lost;
  summary.queue_full_waits = sink.queue_full_waits;
  summary.trace_bytes = sink.bytes();
  summary.write_error = sink.error();
  summary.index_note = sink.index_note();
  summary.stop_reason = stop_reason;
  return summary;
}

}  // namespace retrace::record
