// run_shadow: the legs' traces and mirrors around record's proxy, the reporter, and the end.
#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <ostream>
#include <thread>

#include <boost/json.hpp>

#include "base/private_file.hpp"
#include "format/header.hpp"
#include "record/trace_sink.hpp"
#include "shadow/leg_scrape.hpp"
#include "shadow/shadow.hpp"
#include "version.hpp"

namespace retrace::shadow {

namespace {

constexpr std::string_view kMarker = "shadow.json";

std::string leg_settings(const ShadowOptions& options, Leg leg, const net::Url& url) {
  boost::json::object settings;
  settings["command"] = "shadow";
  settings["leg"] = to_string(leg);
  settings["url"] = url.str();
  settings["primary"] = options.proxy.upstream.str();
  settings["sample"] = options.proxy.sample;
  settings["mirror_queue"] = options.mirror_queue;
  settings["keep_secrets"] = options.proxy.keep_secrets;  // record's key: credentials kept verbatim
  return boost::json::serialize(settings);
}

// A leg's trace redacts its own credentials' headers by name, whatever they are called.
std::vector<std::string> redacted_headers(const ShadowOptions& options, Leg leg) {
  auto names = options.proxy.redact_headers;
  for (const auto& header : leg == Leg::control ? options.control_headers : options.candidate_headers)
    names.push_back(header.name);
  return names;
}

// The reporter: summary.json, summary.md and report.html rewritten every --report-every, and once at the end.
class Reporter {
 public:
  Reporter(const std::filesystem::path& dir, std::chrono::milliseconds every, std::ostream& log)
      : dir_(dir), every_(every), log_(log) {}
  ~Reporter() { stop(); }
  void start(std::function<void()> write) {
    write_ = std::move(write);
    thread_ = std::thread([this] {
      std::unique_lock lock(mutex_);
      while (!wake_.wait_for(lock, every_, [this] { return stopping_; })) {
        lock.unlock();
        write_();
        lock.lock();
      }
    });
  }
  void stop() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  void write(const Verdict& verdict, const RunFacts& facts) {
    try {
      write_private_file(dir_ / "summary.json", summary_json(verdict, facts));
      write_private_file(dir_ / "summary.md", summary_markdown(verdict, facts));
      write_private_file(dir_ / "report.html", summary_html(verdict, facts));
    } catch (const std::exception& e) {
      std::lock_guard lock(mutex_);
      log_ << "retrace shadow: the summary could not be written: " << e.what() << std::endl;
    }
  }

 private:
  std::filesystem::path dir_;
  std::chrono::milliseconds every_;
  std::ostream& log_;
  std::function<void()> write_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace

std::filesystem::path leg_directory(const std::filesystem::path& dir, Leg leg) {
  return dir / to_string(leg);
}

void check_legs(const ShadowOptions& options) {
  auto same = [](const net::Url& a, const net::Url& b) { return net::pool_key(a) == net::pool_key(b) && a.join("/") == b.join("/"); };
  const auto& primary = options.proxy.upstream;
  if (same(options.candidate, primary))
    throw std::invalid_argument("--candidate " + options.candidate.str() +
                                " is the primary's URL: shadow would compare the primary with itself; "
                                "give the candidate deployment's own URL");
  if (options.control && same(*options.control, primary))
    throw std::invalid_argument("--control " + options.control->str() +
                                " is the primary's URL: the control must be a second replica of the "
                                "primary's deployment, on its own URL (or leave --control out)");
  if (options.control && same(*options.control, options.candidate))
    throw std::invalid_argument("--control and --candidate are the same URL " + options.candidate.str() +
                                ": give the control a replica of the primary's deployment");
}

std::optional<ShadowLegs> shadow_legs(const std::filesystem::path& dir) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(dir / kMarker, ec)) return std::nullopt;
  ShadowLegs legs;
  legs.primary = leg_directory(dir, Leg::primary);
  for (Leg leg : {Leg::control, Leg::candidate}) {
    auto path = leg_directory(dir, leg);
    if (std::filesystem::is_directory(path, ec)) legs.runs.emplace_back(std::string(to_string(leg)), path);
  }
  return legs;
}

ShadowResult run_shadow(const ShadowOptions& options,
                        const std::function<void(const std::string&)>& on_listening, std::ostream& log,
                        const Clock& clock) {
  check_legs(options);
  create_private_directories(options.out);
  const auto run_start = clock.now();

  Pairing pairing(options.control.has_value(), options.diff);
  std::vector<Leg> legs;
  if (options.control) legs.push_back(Leg::control);
  legs.push_back(Leg::candidate);

  // Each mirror leg's /metrics, when scraped (null when not): before the sinks, whose threads
  // take its scrapes until they close.
  std::vector<std::unique_ptr<LegScrape>> scrapes;
  // Each mirror leg's trace: a segment set written by record's trace thread.
  std::vector<std::unique_ptr<record::TraceSink>> sinks;
  std::vector<std::unique_ptr<Mirror>> mirrors;
  std::shared_ptr<net::asio::ssl::context> tls;
  boost::json::object marker{{"format", "retrace shadow"}, {"primary", options.proxy.upstream.str()}};
  for (Leg leg : legs) {
    const auto& url = leg == Leg::control ? *options.control : options.candidate;
    marker[to_string(leg)] = url.str();
    pairing.set_url(leg, url.str());
    if (url.tls() && !tls) tls = net::make_client_tls_context(options.proxy.tls);
    auto header = new_trace_header(Source::recorded, kToolVersion, url.str(), leg_settings(options, leg, url), clock);
    record::SegmentOptions segments;
    segments.segmented = true;
    auto sink = std::make_unique<record::TraceSink>(
        leg_directory(options.out, leg), header, options.proxy.writer, segments, clock,
        [&log, leg](const std::string& line) { log << "retrace shadow: " << to_string(leg) << ": " << line << std::endl; },
        Redactor(options.proxy.keep_secrets, redacted_headers(options, leg)));
    sink->max_response_bytes = options.proxy.max_response_bytes;
    const auto& scrape = leg == Leg::control ? options.control_scrape : options.candidate_scrape;
    scrapes.push_back(nullptr);
    if (scrape.enabled) {
      auto say = [&log, leg](std::string_view line) {
        log << "retrace shadow: " << to_string(leg) << ": " << line << std::endl;
      };
      scrapes.back() = std::make_unique<LegScrape>(scrape, url, tls, clock, run_start, say);
      sink->scrapes = [leg_scrape = scrapes.back().get()] { return leg_scrape->take(); };
    }
    sinks.push_back(std::move(sink));
  }
  write_private_file(options.out / kMarker, boost::json::serialize(marker) + "\n");

  std::function<void(const std::string&)> stop_proxy;
  std::mutex stop_mutex;
  std::atomic<bool> pairs_reached{false};
  auto check_pairs = [&] {
    if (options.max_pairs == 0 || pairing.candidate_pairs() < options.max_pairs || pairs_reached.exchange(true))
      return;
    std::lock_guard lock(stop_mutex);
    if (stop_proxy) stop_proxy("--max-pairs reached");
  };

  for (std::size_t i = 0; i < legs.size(); ++i) {
    Leg leg = legs[i];
    sinks[i]->on_written = [&pairing, &check_pairs, leg](std::uint64_t tag, const Exchange& exchange) {
      pairing.on_mirror(leg, tag, exchange);
      check_pairs();
    };
    sinks[i]->start([&log, leg] {
      log << "retrace shadow: the " << to_string(leg) << " leg's trace could not be written; its "
          << "later exchanges are lost (the primary's trace and the client are unaffected)" << std::endl;
    });
    MirrorOptions mirror;
    mirror.leg = leg;
    mirror.url = leg == Leg::control ? *options.control : options.candidate;
    mirror.credentials = leg == Leg::control ? options.control_headers : options.candidate_headers;
    mirror.queue = options.mirror_queue;
    mirror.concurrency = options.mirror_concurrency;
    mirror.timeout = options.proxy.upstream_timeout;
    mirror.max_response_bytes = options.proxy.max_response_bytes;
    mirror.tls = tls;
    auto* sink = sinks[i].get();
    mirrors.push_back(std::make_unique<Mirror>(
        std::move(mirror), clock, run_start,
        [sink](record::CapturedExchange&& captured) { sink->submit(std::move(captured)); },
        [&pairing, leg](std::uint64_t tag, DropReason why) { pairing.on_dropped(leg, tag, why); }));
    mirrors.back()->start();
  }

  RunFacts facts;
  facts.primary = options.proxy.upstream.str();
  facts.fail_if_excess = options.fail_if_excess;
  std::atomic<std::uint64_t> next_tag{0};

  record::RecordOptions proxy = options.proxy;
  proxy.out = leg_directory(options.out, Leg::primary);
  proxy.segments.segmented = true;
  proxy.on_answered = [&](const Request& request) {
    auto tag = next_tag.fetch_add(1, std::memory_order_relaxed) + 1;
    auto shared = std::make_shared<const Request>(request);
    for (auto& mirror : mirrors) mirror->offer(tag, shared);
    return tag;
  };
  proxy.on_written = [&](std::uint64_t tag, const Exchange& exchange) {
    pairing.on_primary(tag, exchange);
    check_pairs();
  };
  std::function<record::RecordProgress()> proxy_progress;  // guarded by stop_mutex, as stop_proxy
  record::RecordProgress relayed;  // its last reading, guarded by stop_mutex
  proxy.on_started = [&](const record::RunningProxy& running) {
    std::lock_guard lock(stop_mutex);
    stop_proxy = running.stop;
    proxy_progress = running.progress;
  };
  // The proxy's functions live as long as run_recorder: a pair compared during the mirrors' drain
  // must not reach them afterwards, nor the reporter.
  proxy.on_stopping = [&] {
    std::lock_guard lock(stop_mutex);
    if (proxy_progress) relayed = proxy_progress();
    stop_proxy = nullptr;
    proxy_progress = nullptr;
  };
  proxy.extra_metrics = [&pairing] { return metrics_text(pairing.snapshot()); };

  Reporter reporter(options.out, options.report_every, log);
  reporter.start([&] {
    RunFacts now = facts;
    {
      // The proxy's own counts, as at the end (not the mirrored requests: sampled-out ones are
      // forwarded too), their last reading once the proxy has stopped and the mirrors drain.
      std::lock_guard lock(stop_mutex);
      if (proxy_progress) relayed = proxy_progress();
      now.forwarded = relayed.forwarded;
      now.sampled_out = relayed.sampled_out;
    }
    now.elapsed_seconds = std::chrono::duration<double>(clock.now() - run_start).count();
    reporter.write(pairing.snapshot(), now);
  });

  ShadowResult result;
  try {
    result.primary = record::run_recorder(proxy, on_listening, log, clock);
  } catch (...) {
    reporter.stop();
    for (auto& mirror : mirrors) mirror->stop(std::chrono::milliseconds(0));
    for (auto& scrape : scrapes)
      if (scrape) scrape->stop();
    for (auto& sink : sinks) sink->close();
    throw;
  }
  reporter.stop();
  // The mirrors finish what they hold (up to --drain-timeout); the rest is cut or dropped.
  for (auto& mirror : mirrors) mirror->stop(options.proxy.drain_timeout);
  for (auto& scrape : scrapes)
    if (scrape) scrape->stop();  // the sample after the drain
  for (auto& sink : sinks) sink->close();

  facts.forwarded = result.primary.forwarded;
  facts.sampled_out = result.primary.sampled_out;
  facts.elapsed_seconds = std::chrono::duration<double>(clock.now() - run_start).count();
  facts.state = result.primary.stop_reason.empty() ? "stopped" : result.primary.stop_reason;
  result.verdict = pairing.snapshot();
  result.facts = facts;
  result.gate_failed = gate_fails(result.verdict, facts);
  reporter.write(result.verdict, facts);
  return result;
}

}  // namespace retrace::shadow
