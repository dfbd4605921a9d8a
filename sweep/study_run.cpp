// Running a study: the preflight once, each pending run with its cache state made as the
// identified server allows (plan saved after each), then the summary from the run files.
#include <boost/json.hpp>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <random>

#include "base/private_file.hpp"
#include "net/connection.hpp"
#include "net/fetch.hpp"
#include "report/html.hpp"
#include "sweep/study.hpp"

namespace retrace::sweep {

namespace {

// The flags that choose the requests: study_input applies them once, so the runs do not again.
ReplayArgs run_args(const Plan& plan) {
  ReplayArgs args = plan.replay;
  args.filters.clear();
  args.limit.reset();
  args.requests.reset();
  args.window_from.clear();
  args.window_to.clear();
  args.sample_sessions.reset();
  return args;
}

std::vector<Label> study_labels(const PlannedRun& run, const std::string& cache, bool control) {
  return {{"run", run.name},
          {"concurrency", level_text(run.level)},
          {"cache", cache},
          {"repeat", std::to_string(run.repeat)},
          {"study_role", run.baseline ? "baseline" : control ? "control" : "candidate"}};
}

// Salts unique to this process, so a resumed study never meets its interrupted attempt's cache.
std::string salt_nonce() {
  std::random_device random;
  char text[20];
  std::snprintf(text, sizeof text, "%08x%08x", random(), random());
  return text;
}

void flush_cache(const replay::Preflight& checked, const Plan& plan, std::ostream* log) {
  std::shared_ptr<boost::asio::ssl::context> tls;
  if (checked.url.tls()) tls = net::make_client_tls_context({plan.replay.ca_file, plan.replay.insecure});
  auto answer = net::post_json(checked.url, tls, "/flush_cache", "{}", std::chrono::seconds(30), 1 << 16);
  if (log && (answer.status < 200 || answer.status >= 300))
    *log << "study: warning: POST /flush_cache answered "
         << (answer.status ? std::to_string(answer.status) : answer.error)
         << "; this cold run may meet a warm cache (its cached tokens will tell)\n";
}

}  // namespace

std::optional<report::StudySummary> run_study(Plan& plan, const StudySettings& settings,
                                              const std::filesystem::path& dir, const SweepIo& io) {
  std::ostream& log = io.log ? *io.log : std::cerr;
  LoadedTrace input = replay::load_input(plan.trace, to_replay_options(plan.replay, plan.target, 1, {}),
                                         log, "study");
  LoadedTrace requests = study_input(input, plan, settings);
  check_greedy(requests, plan, settings);
  ReplayArgs args = run_args(plan);
  for (double level : plan.levels) to_replay_options(args, plan.target, static_cast<int>(level), {});
  diff_options(plan, false);
  auto checked = std::make_shared<const replay::Preflight>(
      replay::preflight(requests, to_replay_options(args, plan.target, static_cast<int>(plan.levels.front()), {})));
  CacheControl control = cache_control(checked->server.kind);
  if (io.log) {
    for (const auto& note : checked->notes) *io.log << "study: " << note << "\n";
    *io.log << "study: " << requests.exchanges.size() << " requests per run; server " << checked->server.kind
            << (checked->server.version.empty() ? "" : " " + checked->server.version) << "; cold cache: "
            << cache_method(control, "cold") << "\n";
  }
  const std::string nonce = salt_nonce();
  auto pending = pending_runs(plan);
  if (io.log && pending.size() < plan.runs.size())
    *io.log << "study: " << plan.runs.size() - pending.size() << " of " << plan.runs.size()
            << " runs already done; continuing\n";
  std::size_t sent_redacted = 0;  // said once, after the runs
  for (std::size_t index : pending) {
    if (io.stop && io.stop->load()) return std::nullopt;
    auto& run = plan.runs[index];
    const std::string& cache = settings.run_cache.at(index);
    bool is_control = !run.baseline && run.level == plan.levels.front() && cache == settings.cache.front();
    auto options = to_replay_options(args, plan.target, static_cast<int>(run.level),
                                     study_labels(run, cache, is_control));
    options.preflight = checked;
    LoadedTrace salted;
    const LoadedTrace* sent = &requests;
    if (cache == "cold") {
      if (control == CacheControl::flush) flush_cache(*checked, plan, io.log);
      salted = cold_input(requests, control, "retrace-study-" + nonce + "-" + run.name);
      sent = &salted;
    } else {
      options.warmup = requests.exchanges.size();  // the first pass; the run measures the second
    }
    if (io.log)
      *io.log << "study: run " << (index + 1) << "/" << plan.runs.size() << " " << run.name
              << (run.baseline ? " (baseline)" : is_control ? " (control)" : "") << ": concurrency "
              << level_text(run.level) << ", " << cache << " ..." << std::flush;
    auto result = replay::run_replay(*sent, options, dir / run.file, io.stop);
    if (result.interrupted) {
      if (io.log) *io.log << " interrupted\n";
      return std::nullopt;
    }
    run.done = true;
    sent_redacted += result.sent_redacted;
    save_plan(plan, dir);
    if (io.log) {
      char line[160];
      std::snprintf(line, sizeof line, " %zu requests, %zu errors, %.2f req/s\n", result.stats.exchanges,
                    result.stats.exchanges - result.stats.completed, result.stats.requests_per_s);
      *io.log << line;
    }
  }
  if (io.log && sent_redacted) *io.log << "study: " << replay::sent_redacted_note(sent_redacted) << "\n";
  auto summary = summarize_study(plan, settings, dir);
  write_private_file(dir / "summary.json", report::study_to_json(summary));
  write_private_file(dir / "summary.md", report::study_to_markdown(summary));
  write_private_file(dir / "summary.csv", report::study_to_csv(summary));
  write_private_file(dir / "report.html", report::render_html(report::study_report(summary)));
  return summary;
}

}  // namespace retrace::sweep
