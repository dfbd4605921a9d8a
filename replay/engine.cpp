// run_replay: plan -> start workers -> wait -> merge -> report (wrk's shape). The workers
// (replay/worker.hpp) run the exchanges; a writer thread, fed by a queue, writes them to the
// trace in arrival order; the trace header carries what the server said about itself before and
// after the run.

#include <malloc.h>

#include <algorithm>
#include <iostream>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/json.hpp>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "format/header.hpp"
#include "net/fetch.hpp"
#include "net/run_handlers.hpp"
#include "replay/client_usage.hpp"
#include "replay/feed.hpp"
#include "replay/preflight.hpp"
#include "replay/replay.hpp"
#include "replay/shard.hpp"
#include "replay/worker.hpp"
#include "version.hpp"

namespace retrace::replay {
namespace {

namespace asio = boost::asio;
namespace json = boost::json;
using net::Fetched;

// /v1/models answers are small; a Prometheus /metrics page can run to megabytes.
constexpr std::size_t kServerInfoBodyLimit = 16 * 1024 * 1024;

json::value json_or_string(const std::string& text) {
  json::error_code ec;
  auto value = json::parse(text, ec);
  if (ec) return json::string(text);
  return value;
}

std::string server_info_json(const Preflight& checked, const Fetched& metrics_before,
                             const std::optional<Fetched>& metrics_after) {
  const Fetched& models = checked.probes.models;
  json::object info;
  info["models_status"] = models.status;
  info["models"] = models.status == 200 ? json_or_string(models.body) : json::value(nullptr);
  json::value preflight = json::parse(checked.to_json());
  info["server"] = preflight.as_object()["server"];
  info["preflight"] = std::move(preflight);
  info["metrics_before"] =
      metrics_before.status == 200 ? json::value(json::string(metrics_before.body)) : json::value(nullptr);
  if (metrics_after)
    info["metrics_after"] = metrics_after->status == 200 ? json::value(json::string(metrics_after->body))
                                                         : json::value(nullptr);
  return json::serialize(info);
}

std::int64_t unix_now_ns(const Clock& clock) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(clock.wall().time_since_epoch())
      .count();
}

// --start-at: waits (polling `stop`) for the instant, then sets the run's clock so that offset 0
// is that instant even when this process got there late. Returns how late it began (ns), or
// nullopt when stopped while waiting.
std::optional<std::int64_t> start_clock_at(Shared& shared, std::int64_t start_at_ns,
                                           const std::atomic<bool>* stop) {
  while (true) {
    auto left = start_at_ns - unix_now_ns(shared.clock);
    if (left <= 0) break;
    if (stop && stop->load()) return std::nullopt;
    std::this_thread::sleep_for(std::min<std::chrono::nanoseconds>(std::chrono::nanoseconds(left),
                                                                   std::chrono::milliseconds(50)));
  }
  auto steady = shared.clock.now();
  auto late_ns = unix_now_ns(shared.clock) - start_at_ns;
  shared.run_start = steady - std::chrono::nanoseconds(late_ns);
  shared.run_start_unix_ns = start_at_ns;
  return late_ns;
}

// Runs one phase (warmup or the measured run) on the workers until it is done or stopped. With
// `start_at`, the phase's clock starts at that wall-clock instant (`clock_offset` says how late
// this process got there).
void run_phase(Shared& shared, std::vector<std::unique_ptr<Worker>>& workers,
               const std::atomic<bool>* stop, const std::function<void()>& on_tick,
               bool& interrupted, std::optional<std::int64_t> start_at = std::nullopt,
               std::optional<std::int64_t>* clock_offset = nullptr, double* busiest_thread_cpu_s = nullptr) {
  shared.next_chain = 0;
  if (start_at) {
    auto late = start_clock_at(shared, *start_at, stop);
    if (!late) {
      interrupted = true;
      return;
    }
    if (clock_offset) *clock_offset = *late;
  } else {
    shared.run_start = shared.clock.now();
    shared.run_start_unix_ns = unix_now_ns(shared.clock);
  }
  auto worker_count = workers.size();
  if (shared.kind == ScheduleKind::concurrency) {
    auto slots = static_cast<std::size_t>(std::max(shared.options.schedule.concurrency, 1));
    for (std::size_t s = 0; s < slots; ++s) {
      auto& worker = *workers[s % worker_count];
      asio::co_spawn(worker.io(), worker.run_closed_slot(), asio::detached);
    }
  } else {
    for (auto& worker : workers) asio::co_spawn(worker->io(), worker->run_launcher(), asio::detached);
  }
  std::atomic<std::size_t> running{worker_count};
  std::vector<double> thread_cpu_s(worker_count, 0.0);  // each slot written by its thread only
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < worker_count; ++t)
    threads.emplace_back([&worker = workers[t], &running, &cpu_s = thread_cpu_s[t]] {
      worker->io().restart();
      net::run_handlers(worker->io(), [](std::string_view what) {
        std::cerr << "retrace replay: internal error in a request's handler (" + std::string(what) +
                         "); that request was dropped and the run goes on\n";
      });
      cpu_s = thread_cpu_seconds();  // a new thread each phase: this phase's CPU
      running.fetch_sub(1);
    });
  bool stop_sent = false;
  while (running.load() > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (on_tick) on_tick();
    if (!stop_sent && stop && stop->load()) {
      stop_sent = true;
      interrupted = true;
      if (shared.feed) shared.feed->stop();  // a slot waiting for a request ends too
      for (auto& worker : workers) {
        Worker* w = worker.get();
        asio::post(w->io(), [w] { w->stop_now(); });
      }
    }
  }
  for (auto& thread : threads) thread.join();
  if (busiest_thread_cpu_s)
    *busiest_thread_cpu_s = *std::max_element(thread_cpu_s.begin(), thread_cpu_s.end());
}

// What a run sends: a loaded trace's plan, or a streamed input's feed (replay/feed.hpp).
class RunInput {
 public:
  virtual ~RunInput() = default;
  virtual std::size_t count() const = 0;  // requests the measured run sends
  virtual std::size_t rejected() const = 0;
  virtual std::string identity_json() const = 0;
  // Sets `shared` up for a phase: `warmup` requests (closed loop), or the measured run.
  virtual void begin(Shared& shared, std::optional<std::size_t> warmup) = 0;
  // After the phase: what went wrong with the input during it (a streamed input that changed).
  virtual std::exception_ptr end(Shared& shared) = 0;
};

class LoadedRun final : public RunInput {
 public:
  LoadedRun(const LoadedTrace& input, const Options& options, const Preflight& checked)
      : input_(input) {
    auto chosen = select_exchanges(input.exchanges, options, options.sessions || options.live_sessions);
    prepared_ = prepare_requests(input, chosen, options, checked);
    chains_ = make_chains(input, prepared_, options);
  }
  std::size_t count() const override { return prepared_.size(); }
  std::size_t rejected() const override { return rejected_by_record(input_.exchanges); }
  std::string identity_json() const override { return input_identity_json(input_); }
  void begin(Shared& shared, std::optional<std::size_t> warmup) override {
    shared.prepared = &prepared_;
    shared.chains = &chains_;
    if (!warmup) return;
    warm_.clear();
    for (std::size_t i = 0; i < *warmup; ++i)  // the first N chosen requests, cycling
      warm_.emplace_back().items.push_back(i % prepared_.size());
    shared.chains = &warm_;
  }
  std::exception_ptr end(Shared& shared) override {
    shared.chains = nullptr;
    shared.prepared = nullptr;
    warm_ = {};
    return nullptr;
  }

 private:
  const LoadedTrace& input_;
  std::vector<Prepared> prepared_;
  std::vector<Chain> chains_, warm_;
};

class StreamedRun final : public RunInput {
 public:
  StreamedRun(const StreamedInput& input, const Options& options, const Preflight& checked)
      : input_(input), options_(options), prepare_(options, checked) {
    // What a loaded run finds when it prepares every request before the traffic: a --set or
    // --unset that cannot apply. (Without them, preparing cannot fail: the scan checked methods.)
    if (options.set.empty() && options.unset.empty()) return;
    TraceReader reader(input.path);
    Exchange exchange;
    if (input.plan) {
      for (const auto& send : input.plan->sends) {
        if (send.cycle > 0) continue;
        reader.read_request_at(input.plan->at[send.input_index], exchange);
        prepare_(exchange);
      }
      return;
    }
    Selection selection(options, false);
    while (!selection.full() && reader.next_request(exchange))
      if (selection.take(exchange)) prepare_(exchange);
  }
  std::size_t count() const override { return input_.count(options_); }
  std::size_t rejected() const override { return input_.facts.rejected; }
  std::string identity_json() const override { return input_.identity_json; }
  void begin(Shared& shared, std::optional<std::size_t> warmup) override {
    if (input_.plan) {
      warm_ = warmup ? input_.plan->warmup(*warmup) : std::vector<Chain>{};
      feed_ = std::make_unique<Feed>(input_, options_, prepare_, warmup ? warm_ : input_.plan->chains);
    } else {
      bool open_loop = !warmup && options_.schedule.kind == ScheduleKind::rate;
      feed_ = std::make_unique<Feed>(input_, options_, prepare_, warmup.value_or(count()), open_loop);
    }
    shared.feed = feed_.get();
  }
  std::exception_ptr end(Shared& shared) override {
    auto failure = feed_->finish();
    shared.feed = nullptr;
    feed_.reset();
    return failure;
  }

 private:
  const StreamedInput& input_;
  const Options& options_;
  Preparer prepare_;
  std::vector<Chain> warm_;  // a planned run's warmup chains, while they are fed
  std::unique_ptr<Feed> feed_;
};

void check_options(const Options& options) {
  if (options.shard_count == 0 || options.shard_index >= options.shard_count)
    throw std::invalid_argument("bad shard: index must be below count");
  const auto& schedule = options.schedule;
  if (schedule.kind == ScheduleKind::concurrency && schedule.concurrency < 1)
    throw std::invalid_argument("--concurrency must be at least 1");
  if (schedule.kind == ScheduleKind::rate && !(schedule.rate > 0))
    throw std::invalid_argument("--rate must be above 0");
  if (schedule.kind == ScheduleKind::recorded && !(schedule.speed > 0))
    throw std::invalid_argument("--speed must be above 0");
}

RunResult run(RunInput& input, const Preflight& checked, const Options& options,
              const std::filesystem::path& out, const std::atomic<bool>* stop,
              const std::function<void(const Progress&)>& on_progress);

}  // namespace

RunResult run_replay(const LoadedTrace& input, const Options& options,
                     const std::filesystem::path& out, const std::atomic<bool>* stop,
                     const std::function<void(const Progress&)>& on_progress) {
  check_options(options);
  auto checked = options.preflight ? options.preflight
                                    : std::make_shared<const Preflight>(preflight(input, options));
  LoadedRun run_input(input, options, *checked);
  return run(run_input, *checked, options, out, stop, on_progress);
}

RunResult run_replay(const StreamedInput& input, const Options& options,
                     const std::filesystem::path& out, const std::atomic<bool>* stop,
                     const std::function<void(const Progress&)>& on_progress) {
  check_options(options);
  auto checked = options.preflight ? options.preflight
                                    : std::make_shared<const Preflight>(preflight(input.facts, options));
  StreamedRun run_input(input, options, *checked);
  return run(run_input, *checked, options, out, stop, on_progress);
}

namespace {

RunResult run(RunInput& input, const Preflight& checked, const Options& options,
              const std::filesystem::path& out, const std::atomic<bool>* stop,
              const std::function<void(const Progress&)>& on_progress) {
  const auto& schedule = options.schedule;
  // One malloc arena for every thread of the run: glibc gives each new thread an arena of its
  // own, and each --repeat pass (or sweep level) starts new worker and writer threads, whose
  // freed memory stayed resident and fragmented there: RSS crept ~370 KiB a pass even after
  // malloc_trim. Set before the first thread asks for an arena (glibc reads the cap then); its
  // cost in client CPU per request is in bench/RESULTS.md ("replay's memory across --repeat").
  static const bool one_arena = ::mallopt(M_ARENA_MAX, 1) == 1;
  (void)one_arena;
  const auto& url = checked.url;
  std::shared_ptr<asio::ssl::context> tls;
  if (url.tls()) tls = net::make_client_tls_context({options.ca_file, options.insecure});

  Shared shared(options, url, tls);
  shared.kind = schedule.kind;

  auto run_name = options.run_name.empty() ? out.stem().string() : options.run_name;
  std::vector<Label> labels{{"run", run_name}};
  if (schedule.kind == ScheduleKind::concurrency)
    labels.push_back({"concurrency", std::to_string(schedule.concurrency)});
  if (schedule.kind == ScheduleKind::rate) {
    std::ostringstream rate;
    rate << schedule.rate;
    labels.push_back({"rate", rate.str()});
  }
  if (options.repeat_index > 0) labels.push_back({"repeat", std::to_string(options.repeat_index)});
  for (const auto& label : options.labels) {
    auto same = std::find_if(labels.begin(), labels.end(),
                             [&](const Label& l) { return l.key == label.key; });
    if (same != labels.end()) same->value = label.value;
    else labels.push_back(label);
  }
  shared.exchange_labels = labels;

  // Bounded so that a dead or stalled target costs seconds, not the whole --timeout.
  std::chrono::steady_clock::duration probe_timeout = std::min<std::chrono::steady_clock::duration>(options.timeout, std::chrono::seconds(5));
  auto metrics_before = net::fetch(url, tls, "/metrics", probe_timeout, kServerInfoBodyLimit);

  auto settled = options;  // what the preflight chose stands in the settings
  settled.token_ids = checked.token_ids;
  settled.model = checked.model;
  settled.skipped_rejected = input.rejected();
  TraceHeader header =
      new_trace_header(Source::replayed, kToolVersion, url.str(), settings_json(settled, settled.input),
                       *options.clock);
  // What `retrace merge` checks and records (replay/shard.hpp); the clock offset once known.
  bool sharded = options.shard_count > 1 || options.start_at_unix_ns.has_value();
  ShardFacts facts;
  if (sharded) {
    if (options.start_at_unix_ns) check_start_at(*options.start_at_unix_ns, unix_now_ns(*options.clock));
    facts.input_identity = input.identity_json();
    facts.selected = input.count();
    facts.host = header.host;
    facts.start_at_ns = options.start_at_unix_ns;
    header.settings = with_shard_facts(header.settings, facts);
  }
  header.labels = labels;
  header.server_info = server_info_json(checked, metrics_before, std::nullopt);

  // Fails here, before any traffic, when the destination is not writable.
  auto partial_path = out;
  partial_path += ".partial";
  // With a /metrics to scrape after the run, OUT.partial is copied into OUT under the final
  // header at the end (see below), its frames byte for byte. The writer thread shares the CPU
  // with the workers, so it compresses at the fastest level (zstd is most of its cost): a replayed
  // trace is a little larger for it (bench/RESULTS.md, replay).
  WriterOptions partial_options = options.writer;
  if (metrics_before.status == 200) partial_options.zstd_level = std::min(partial_options.zstd_level, 1);
  partial_options.write_index = true;  // what the copy goes by; OUT follows options.writer
  auto writer = std::make_unique<TraceWriter>(partial_path, header, partial_options);

  unsigned thread_count = options.threads ? options.threads : std::thread::hardware_concurrency();
  thread_count = std::max(1u, thread_count);
  if (schedule.kind == ScheduleKind::concurrency)
    thread_count = std::min<unsigned>(thread_count, static_cast<unsigned>(schedule.concurrency));
  std::vector<std::unique_ptr<Worker>> workers;
  for (unsigned t = 0; t < thread_count; ++t) workers.push_back(std::make_unique<Worker>(shared));

  bool interrupted = false;
  Progress progress;
  auto tick = [&] {
    if (!on_progress) return;
    progress.done = shared.done.load();
    progress.errors = shared.errors.load();
    on_progress(progress);
  };

  // Warmup: the first N chosen requests (cycling), closed loop, not recorded.
  if (options.warmup > 0 && input.count() > 0) {
    input.begin(shared, options.warmup);
    shared.kind = ScheduleKind::concurrency;
    shared.record = false;
    progress.total = options.warmup;
    run_phase(shared, workers, stop, {}, interrupted);
    input.end(shared);  // what the run's own reading meets, it reports
    shared.kind = schedule.kind;
    shared.record = true;
    shared.done = 0;
    shared.errors = 0;
  }

  // The writer thread: assigns ids in arrival order, gathers the run's figures.
  WriteQueue queue;
  shared.queue = &queue;
  StatsBuilder stats(schedule.kind != ScheduleKind::concurrency, options.slo);
  stats.reserve(input.count());
  std::exception_ptr writer_failure;
  std::thread writer_thread([&] {
    std::vector<Exchange> batch;
    std::uint64_t next_id = 0;
    bool failed = false;
    while (queue.pop_all(batch)) {
      for (auto& exchange : batch) {
        exchange.id = next_id++;
        stats.add(summarize(exchange));  // its offsets are the run's own: no wall-clock start
        if (failed) continue;
        try {
          writer->write(exchange);
        } catch (...) {
          writer_failure = std::current_exception();
          failed = true;
        }
      }
    }
  });

  progress.total = input.count();
  std::exception_ptr input_failure;
  std::optional<ClientUsage> client;
  if (!interrupted) {
    input.begin(shared, std::nullopt);
    ClientMeter meter;
    double busiest_thread_cpu_s = 0;
    run_phase(shared, workers, stop, tick, interrupted, options.start_at_unix_ns, &facts.clock_offset_ns,
              &busiest_thread_cpu_s);
    client = meter.usage(busiest_thread_cpu_s, static_cast<unsigned>(workers.size()));
    input_failure = input.end(shared);
  }
  queue.close();
  writer_thread.join();
  workers.clear();
  if (writer_failure) std::rethrow_exception(writer_failure);
  tick();
  writer->close();
  writer.reset();

  // The final header carries the after-scrape: copy the run into `out` under it.
  std::optional<Fetched> metrics_after;
  if (metrics_before.status == 200)
    metrics_after = net::fetch(url, tls, "/metrics", probe_timeout, kServerInfoBodyLimit);
  if (facts.clock_offset_ns) header.settings = with_shard_facts(settings_json(settled, settled.input), facts);
  // The client's own CPU over the run (replay/client_usage.hpp) is only known now: the final
  // header always differs from the partial file's.
  if (client) header.settings = with_client_usage(header.settings, *client);
  if (metrics_after || facts.clock_offset_ns || client) {
    if (metrics_after) header.server_info = server_info_json(checked, metrics_before, metrics_after);
    // The run's frames are copied as they are (written at the fast level above); a partial
    // file that is not whole with an index is read and written again record by record.
    if (!copy_trace_with_header(partial_path, out, header, options.writer)) {
      TraceReader reader(partial_path);
      TraceWriter final_writer(out, header, options.writer);
      Exchange exchange;
      while (reader.next(exchange)) final_writer.write(exchange);
      final_writer.close();
    }
    std::filesystem::remove(partial_path);
  } else {
    std::filesystem::rename(partial_path, out);
  }

  // The run's trace is whole for what it sent; the input's failure is the run's error.
  if (input_failure) std::rethrow_exception(input_failure);

  RunResult result;
  result.out = out;
  result.interrupted = interrupted;
  result.stats = std::move(stats).finish();
  result.stats.client = client;
  // What the run's threads freed goes back to the system: glibc keeps it in their per-thread
  // arenas otherwise, and each --repeat pass's new threads fragment them further (the heap in
  // use is flat; RSS grew ~320 KiB a pass: bench/RESULTS.md, "replay's memory across --repeat").
  // What a run keeps is its result: the stats' samples (bounded: metrics/distribution.hpp).
  ::malloc_trim(0);
  return result;
}

}  // namespace
}  // namespace retrace::replay
