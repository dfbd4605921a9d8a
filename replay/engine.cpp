// run_replay: plan -> start workers -> wait -> merge -> report (wrk's shape). The workers
// (replay/worker.hpp) run the exchanges; a writer thread, fed by a queue, writes them to the
// trace in arrival order; the trace header carries what the server said about itself before and
// after the run.

#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <boost/asio/post.hpp>
#include <boost/json.hpp>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "format/trace_copy.hpp"
#include "base/private_file.hpp"
#include "format/header.hpp"
#include "net/fetch.hpp"
#include "net/run_handlers.hpp"
#include "replay/client_usage.hpp"
#include "replay/feed.hpp"
#include "replay/flags.hpp"
#include "replay/malloc_policy.hpp"
#include "replay/preflight.hpp"
#include "replay/replay.hpp"
#include "replay/run_input.hpp"
#include "metrics/server_join.hpp"
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
  const bool scraping = shared.record && shared.scraper;
  if (scraping) shared.scraper->begin(shared.run_start);  // the baseline
  auto worker_count = workers.size();
  if (shared.kind == ScheduleKind::concurrency) {
    auto slots = static_cast<std::size_t>(std::max(shared.options.schedule.concurrency, 1));
    for (std::size_t s = 0; s < slots; ++s) workers[s % worker_count]->start_closed_slot();
  } else {
    for (auto& worker : workers) worker->start_launcher();
  }
  std::atomic<std::size_t> running{worker_count};
  std::vector<double> thread_cpu_s(worker_count, 0.0);  // each slot written by its thread only
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < worker_count; ++t)
    threads.emplace_back([&worker = workers[t], &running, &cpu_s = thread_cpu_s[t]] {
      worker->io().restart();
      net::run_handlers(worker->io(), [](std::string_view what) {
        report_internal_error("a request's handler was dropped", what);
      });
      cpu_s = thread_cpu_seconds();  // a new thread each phase: this phase's CPU
      running.fetch_sub(1);
    });
  bool stop_sent = false;
  while (running.load() > 0) {
    auto wake = std::chrono::steady_clock::now() + std::chrono::milliseconds(50);  // the scrape loop runs in this sleep
    scraping ? shared.scraper->run_until(wake) : std::this_thread::sleep_until(wake);
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

void check_options(const Options& options) {
  if (options.shard_count == 0 || options.shard_index >= options.shard_count)
    throw std::invalid_argument("bad shard: index must be below count");
  const auto& schedule = options.schedule;
  if (schedule.kind == ScheduleKind::concurrency) check_concurrency(schedule.concurrency);
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

// The run's own labels (run, concurrency or rate, repeat), --label replacing same-named ones.
std::vector<Label> run_labels(const Options& options, const std::filesystem::path& out) {
  const auto& schedule = options.schedule;
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
  return labels;
}

// What the header says about the run, kept to write the final header at the end.
struct RunHeader {
  RunSettings settings;  // with what the preflight chose; the shard facts when sharded
  TraceHeader header;
  ShardFacts facts;  // what `retrace merge` checks (replay/shard.hpp); the clock offset once known
  bool sharded = false;
  std::size_t tool_turns_substituted = 0, tool_turns_kept = 0;  // live sessions, known at the end
};

RunHeader start_header(RunInput& input, const Preflight& checked, const Options& options,
                       const std::vector<Label>& labels, const Fetched& metrics_before) {
  Options settled = options;  // what the preflight chose stands in the settings
  settled.token_ids = checked.token_ids;
  settled.model = checked.model;
  settled.skipped_rejected = input.rejected();
  RunHeader run{run_settings(settled, settled.input), {}, {},
                options.shard_count > 1 || options.start_at_unix_ns.has_value()};
  run.header = new_trace_header(Source::replayed, kToolVersion, checked.url.str(), "", *options.clock);
  if (run.sharded) {
    if (options.start_at_unix_ns) check_start_at(*options.start_at_unix_ns, unix_now_ns(*options.clock));
    run.facts.input_identity = input.identity();
    run.facts.selected = input.count();
    run.facts.host = run.header.host;
    run.facts.start_at_ns = options.start_at_unix_ns;
    add_shard_facts(run.settings, run.facts);
  }
  run.header.settings = to_json(run.settings);
  run.header.labels = labels;
  run.header.server_info = server_info_json(checked, metrics_before, std::nullopt);
  return run;
}

// A run's files are made new, never written through a name another user could have prepared
// (base/private_file.hpp): what is at `path` now (an old run's file, or a planted symlink: the
// link itself, not what it points to) is removed, the name is claimed by a new file
// (O_EXCL|O_NOFOLLOW: anything planted again in between fails the run instead), and the writer
// opens that file (O_NOFOLLOW).
void claim_new_file(const std::filesystem::path& path) {
  std::error_code ignored;
  std::filesystem::remove(path, ignored);
  int fd = create_private_file(path);
  if (fd < 0) {
    int error = errno;
    throw TraceError("cannot create trace " + path.string() + " as a new file: " + std::strerror(error) +
                     " (something was put under its name meanwhile; give an --out in a directory only you may write)");
  }
  ::close(fd);
}

// OUT.partial, opened before any traffic (so an unwritable destination fails first). With a
// /metrics to scrape after the run, it is copied into OUT under the final header at the end, its
// frames byte for byte. The writer thread shares the CPU with the workers, so it compresses at
// the fastest level (zstd is most of its cost): a replayed trace is a little larger for it
// (bench/RESULTS.md, replay).
std::unique_ptr<TraceWriter> open_partial(const std::filesystem::path& partial_path, const TraceHeader& header,
                                          const Options& options, bool scrape_after) {
  WriterOptions partial_options = options.writer;
  if (scrape_after) partial_options.zstd_level = std::min(partial_options.zstd_level, 1);
  partial_options.write_index = true;  // what the copy goes by; OUT follows options.writer
  claim_new_file(partial_path);
  return std::make_unique<TraceWriter>(partial_path, header, partial_options);
}

std::vector<std::unique_ptr<Worker>> start_workers(Shared& shared, const Options& options) {
  unsigned thread_count = options.threads ? options.threads : std::thread::hardware_concurrency();
  thread_count = std::max(1u, thread_count);
  if (options.schedule.kind == ScheduleKind::concurrency)
    thread_count = std::min<unsigned>(thread_count, static_cast<unsigned>(options.schedule.concurrency));
  std::vector<std::unique_ptr<Worker>> workers;
  for (unsigned t = 0; t < thread_count; ++t) workers.push_back(std::make_unique<Worker>(shared));
  return workers;
}

// Warmup: the first N chosen requests (cycling), closed loop, not recorded.
void warm_up(RunInput& input, Shared& shared, std::vector<std::unique_ptr<Worker>>& workers,
             const std::atomic<bool>* stop, bool& interrupted) {
  input.begin(shared, shared.options.warmup);
  shared.kind = ScheduleKind::concurrency;
  shared.record = false;
  run_phase(shared, workers, stop, {}, interrupted);
  input.end(shared);  // what the run's own reading meets, it reports
  shared.kind = shared.options.schedule.kind;
  shared.record = true;
  shared.done = 0;
  shared.errors = 0;
}

// The /metrics scrapes taken since the last call, into the trace among the exchanges (and into
// the series exchanges are joined to, when given).
void write_scrapes(TraceWriter& writer, net::Scraper& scraper, metrics::ServerSeries* series = nullptr) {
  for (const auto& scrape : scraper.take()) {
    if (series) series->add(scrape);
    writer.write(scrape);
  }
}

// The writer thread: assigns ids in arrival order, writes each exchange and gathers the run's
// figures, until the queue is closed; join() then rethrows what writing failed with.
class RunWriter {
 public:
  RunWriter(TraceWriter& writer, StatsBuilder& stats, net::Scraper* scraper)
      : scraper_(scraper), thread_([this, &writer, &stats] { drain(writer, stats); }) {}
  ~RunWriter() {  // when the run ends by an exception: the thread is not left running
    if (!thread_.joinable()) return;
    queue_.close();
    thread_.join();
  }
  WriteQueue& queue() { return queue_; }
  void join() {
    queue_.close();
    thread_.join();
    if (failure_) std::rethrow_exception(failure_);
  }

 private:
  void drain(TraceWriter& writer, StatsBuilder& stats) {
    std::vector<QueuedExchange> batch;
    std::uint64_t next_id = 0;
    bool failed = false;
    while (queue_.pop_all(batch)) {
      if (!failed && scraper_) write_scrapes(writer, *scraper_, &series_);  // the latest, for the join
      for (auto& [exchange, tokens_from_events, live] : batch) {
        exchange.id = next_id++;
        if (scraper_) exchange.server_state = series_.join(exchange);
        stats.add(exchange, 0);  // its offsets are the run's own: no wall-clock start
        if (failed) continue;
        try {
          write_with_word(writer, exchange, tokens_from_events, live);  // the writer need not decode them again
          queue_.give_back(exchange.response.events);  // written: a worker's next long one decodes into it
        } catch (...) {
          failure_ = std::current_exception();
          failed = true;
        }
      }
      if (!failed && scraper_) write_scrapes(writer, *scraper_, &series_);
    }
  }

  WriteQueue queue_;
  net::Scraper* scraper_;  // null: the run is not scraped
  metrics::ServerSeries series_;  // the writer thread's
  std::exception_ptr failure_;
  std::thread thread_;  // last: started once the rest is ready
};

// The measured run: every chosen request under the schedule, with the client's own CPU over it.
// Returns what went wrong with the input during it (a streamed input that changed), or null.
std::exception_ptr measure(RunInput& input, Shared& shared, std::vector<std::unique_ptr<Worker>>& workers,
                           const std::atomic<bool>* stop, const std::function<void()>& tick,
                           bool& interrupted, RunHeader& run, std::optional<ClientUsage>& client) {
  input.begin(shared, std::nullopt);
  ClientMeter meter;
  double busiest_thread_cpu_s = 0;
  run_phase(shared, workers, stop, tick, interrupted, shared.options.start_at_unix_ns,
            &run.facts.clock_offset_ns, &busiest_thread_cpu_s);
  if (shared.scraper) shared.scraper->end();  // the sample after the last response
  client = meter.usage(busiest_thread_cpu_s, static_cast<unsigned>(workers.size()));
  return input.end(shared);
}

// The final header carries the after-scrape, the clock offset and the client's CPU, known only
// now: the run is copied from OUT.partial into `out` under it (renamed when nothing changed).
void finish_trace(const std::filesystem::path& partial_path, const std::filesystem::path& out, RunHeader& run,
                  const Preflight& checked, const Fetched& metrics_before,
                  const std::optional<Fetched>& metrics_after, const std::optional<ClientUsage>& client,
                  const WriterOptions& writer_options) {
  auto& header = run.header;
  if (run.facts.clock_offset_ns) run.settings.clock_offset_ns = run.facts.clock_offset_ns;
  if (client) run.settings.client = metrics::rounded(*client);
  const bool live = run.settings.session_mode == "live";
  if (live)
    run.settings.live_tool_turns = {std::string(kLiveToolTurnRule), run.tool_turns_substituted, run.tool_turns_kept};
  if (run.facts.clock_offset_ns || client || live) header.settings = to_json(run.settings);
  if (!metrics_after && !run.facts.clock_offset_ns && !client && !live) {
    std::filesystem::rename(partial_path, out);
    return;
  }
  if (metrics_after) header.server_info = server_info_json(checked, metrics_before, metrics_after);
  // The run's frames are copied as they are (written at the fast level above); a partial
  // file that is not whole with an index is read and written again record by record. Either
  // goes to a new OUT.tmp renamed over OUT: a symlink at OUT is replaced, never written through.
  auto staged = out;
  staged += ".tmp";
  claim_new_file(staged);
  if (!copy_trace_with_header(partial_path, staged, header, writer_options)) {
    TraceReader reader(partial_path);
    TraceWriter final_writer(staged, header, writer_options);
    reader.on_metrics([&](const MetricScrape& scrape) { final_writer.write(scrape); });  // in place
    Exchange exchange;
    while (reader.next(exchange)) final_writer.write(exchange);
    final_writer.close();
  }
  std::filesystem::rename(staged, out);
  std::filesystem::remove(partial_path);
}

RunResult run(RunInput& input, const Preflight& checked, const Options& options,
              const std::filesystem::path& out, const std::atomic<bool>* stop,
              const std::function<void(const Progress&)>& on_progress) {
  use_run_malloc_policy();
  const auto& url = checked.url;
  std::shared_ptr<asio::ssl::context> tls;
  if (url.tls()) tls = net::make_client_tls_context({options.ca_file, options.insecure});
  Shared shared(options, url, tls);
  shared.kind = options.schedule.kind;
  shared.exchange_labels = run_labels(options, out);

  // Bounded so that a dead or stalled target costs seconds, not the whole --timeout.
  auto probe_timeout = std::min<std::chrono::steady_clock::duration>(options.timeout, std::chrono::seconds(5));
  auto metrics_before = net::fetch(url, tls, "/metrics", probe_timeout, kServerInfoBodyLimit);
  auto run_header = start_header(input, checked, options, shared.exchange_labels, metrics_before);
  auto partial_path = out;
  partial_path += ".partial";
  auto writer = open_partial(partial_path, run_header.header, options, metrics_before.status == 200);
  auto workers = start_workers(shared, options);

  bool interrupted = false;
  Progress progress;
  auto tick = [&] {
    if (!on_progress) return;
    progress.done = shared.done.load();
    progress.errors = shared.errors.load();
    on_progress(progress);
  };
  if (options.warmup > 0 && input.count() > 0) {
    progress.total = options.warmup;
    warm_up(input, shared, workers, stop, interrupted);
  }

  StatsBuilder stats(options.schedule.kind != ScheduleKind::concurrency, options.slo);
  // Room for a run's figures up front, but not for --requests 4000000000's: a streamed run's
  // figures grow with the requests it finished, not with those it was asked for.
  stats.reserve(std::min<std::size_t>(input.count(), std::size_t{1} << 20));
  std::unique_ptr<net::Scraper> scraper;
  if (options.scrape.enabled)
    scraper = std::make_unique<net::Scraper>(options.scrape, url, tls, shared.clock,
                                        [&in_flight = shared.in_flight] { return in_flight.now(); },
                                        [](std::string_view line) { std::cerr << "retrace: " << line << "\n"; });
  shared.scraper = scraper.get();
  RunWriter run_writer(*writer, stats, scraper.get());
  shared.queue = &run_writer.queue();
  progress.total = input.count();
  std::exception_ptr input_failure;
  std::optional<ClientUsage> client;
  if (!interrupted) input_failure = measure(input, shared, workers, stop, tick, interrupted, run_header, client);
  run_writer.join();
  if (scraper) write_scrapes(*writer, *scraper);
  shared.scraper = nullptr;
  workers.clear();
  run_header.tool_turns_substituted = shared.tool_turns_substituted.load();
  run_header.tool_turns_kept = shared.tool_turns_kept.load();
  tick();
  writer->close();
  writer.reset();

  std::optional<Fetched> metrics_after;
  if (metrics_before.status == 200)
    metrics_after = net::fetch(url, tls, "/metrics", probe_timeout, kServerInfoBodyLimit);
  finish_trace(partial_path, out, run_header, checked, metrics_before, metrics_after, client, options.writer);
  // The run's trace is whole for what it sent; the input's failure is the run's error.
  if (input_failure) std::rethrow_exception(input_failure);

  RunResult result;
  result.out = out;
  result.interrupted = interrupted;
  result.stats = std::move(stats).finish();
  result.stats.client = client;
  result.sent_redacted = shared.sent_redacted.load();
  // What the run's threads freed goes back to the system: glibc keeps it in their per-thread
  // arenas otherwise, and each --repeat pass's new threads fragment them further (the heap in
  // use is flat; RSS grew ~320 KiB a pass: bench/RESULTS.md, "replay's memory across --repeat").
  // What a run keeps is its result: the stats' samples (bounded: metrics/distribution.hpp).
  ::malloc_trim(0);
  return result;
}

}  // namespace
}  // namespace retrace::replay
