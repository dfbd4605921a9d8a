// Running a capacity search (sweep/find.hpp): replay at the load next_probe() names, measure the
// run (attainment per limit, and its outputs against the baseline with --stable), add it to the
// probes, rewrite plan.json and search_history.json, and go on until the search is resolved, the
// budget is spent or the user stops it. Then the summaries.
#include <algorithm>
#include <chrono>
#include <fstream>
#include <iostream>
#include <sstream>
#include <unordered_map>

#include <boost/json.hpp>

#include "base/described_json.hpp"
#include "base/json_text.hpp"
#include "base/private_file.hpp"
#include "replay/prepare.hpp"
#include "replay/preflight.hpp"
#include "sweep/find.hpp"

namespace retrace::sweep {

namespace {

namespace fs = std::filesystem;

std::string run_name(const Plan& plan, double level, bool control, std::size_t index) {
  std::string prefix = plan.axis == Axis::concurrency ? "c" : std::string(to_string(plan.axis));
  return prefix + level_text(level) + (control ? "-control" : "-r" + std::to_string(index));
}

// Each limit of the SLO alone, with the figure it constrains.
struct Limit {
  std::string name;
  metrics::Slo slo;
  const metrics::Percentiles metrics::Stats::*figure;
};
std::vector<Limit> limits_of(const metrics::Slo& slo) {
  std::vector<Limit> limits;
  if (slo.ttft) limits.push_back({"ttft", metrics::Slo{slo.ttft, {}, {}, {}}, &metrics::Stats::ttft});
  if (slo.tpot) limits.push_back({"tpot", metrics::Slo{{}, slo.tpot, {}, {}}, &metrics::Stats::tpot});
  if (slo.e2e) limits.push_back({"e2e", metrics::Slo{{}, {}, slo.e2e, {}}, &metrics::Stats::e2e});
  if (slo.ttft_tpots)
    limits.push_back({"ttft/tpot", metrics::Slo{{}, {}, {}, slo.ttft_tpots}, &metrics::Stats::ttft});
  return limits;
}

double ms(std::chrono::nanoseconds value) { return double(value.count()) / 1e6; }
// A limit in ms; 0 for one in TPOTs (not a time).
double limit_ms(const Limit& limit) {
  const auto& slo = limit.slo;
  return slo.ttft ? ms(*slo.ttft) : slo.tpot ? ms(*slo.tpot) : slo.e2e ? ms(*slo.e2e) : 0;
}

// A finished run's figures: every limit's attainment read from the trace, and with a baseline its
// outputs compared with the baseline's.
RunOutcome measure(const fs::path& run, const std::string& name, const metrics::Slo& slo, double attainment,
                   const fs::path* baseline, const diff::Options& diff) {
  RunOutcome outcome;
  outcome.name = name;
  auto stats = metrics::stats_of_trace(run, slo);
  outcome.requests = stats.exchanges;
  outcome.errors = stats.exchanges - stats.completed;
  outcome.met = stats.slo_met.value_or(stats.completed);
  outcome.requests_per_s = stats.requests_per_s;
  outcome.output_tokens_per_s = stats.output_tokens_per_s;
  for (const auto& limit : limits_of(slo)) {
    auto alone = metrics::stats_of_trace(run, limit.slo);
    outcome.constraints.push_back({limit.name, limit_ms(limit), alone.slo_met.value_or(0),
                                   (stats.*limit.figure).at(attainment * 100), limit.slo.ttft_tpots});
  }
  if (baseline) {
    auto base = diff::open_trace_source(*baseline);
    auto candidate = diff::open_trace_source(run);
    auto result = diff::compare(*base, {candidate.get()}, diff);
    if (!result.runs.empty()) {
      const auto& compared = result.runs.front();
      std::size_t missing = compared.missing_in_candidate + compared.missing_in_baseline;
      outcome.compared = compared.identical + compared.divergent + missing;
      outcome.differing = compared.divergent + missing;
    }
  }
  return outcome;
}

// The longest limit of the SLO in seconds (10 s without one): how long a request may take.
double longest_limit_s(const metrics::Slo& slo) {
  double longest = 0;
  for (const auto& limit : limits_of(slo)) longest = std::max(longest, limit_ms(limit) / 1000);
  return longest > 0 ? longest : 10;
}

// An open-loop run's intended send offsets (ns, ascending), by replay's own rule (make_chains: the
// arrival process, or the recorded clock with --speed and --max-idle-gap), so its backlog can be
// counted as it runs: requests due by now, less those finished.
std::vector<std::int64_t> intended_offsets(const LoadedTrace& input, const replay::Options& options) {
  auto chosen = replay::select_exchanges(input.exchanges, options, options.sessions || options.live_sessions);
  std::vector<replay::Prepared> prepared(chosen.size());
  std::unordered_map<std::size_t, std::size_t> copies;
  for (std::size_t i = 0; i < chosen.size(); ++i) {
    prepared[i].input_index = chosen[i];
    prepared[i].cycle = copies[chosen[i]]++;
  }
  std::vector<std::int64_t> offsets;
  for (const auto& chain : replay::make_chains(input, prepared, options)) {
    if (!chain.offsets_ns.empty()) offsets.insert(offsets.end(), chain.offsets_ns.begin(), chain.offsets_ns.end());
    else offsets.insert(offsets.end(), chain.items.size(), chain.start_ns);
  }
  std::sort(offsets.begin(), offsets.end());
  return offsets;
}

void write_summaries(const FindSummary& summary, const fs::path& dir) {
  write_private_file(dir / "summary.json", report::find_to_json(summary));
  write_private_file(dir / "summary.md", report::find_to_markdown(summary));
  write_private_file(dir / "summary.csv", report::find_to_csv(summary));
  write_private_file(dir / "report.html", report::render_html(report::find_report(summary)));
}

}  // namespace

void save_history(const FindSummary& summary, const fs::path& dir) {
  boost::json::object root{{"retrace_search_history", 1}, {"search", described_json::to_json(summary)}};
  write_private_file(dir / "search_history.json", json_text(root) + "\n");
}

FindSummary load_history(const fs::path& dir) {
  auto path = dir / "search_history.json";
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path.string() + ": cannot read (is " + dir.string() + " a search made by `retrace sweep --find`?)");
  std::ostringstream text;
  text << in.rdbuf();
  boost::json::error_code ec;
  auto root = boost::json::parse(text.str(), ec);
  const boost::json::object* search = nullptr;
  if (!ec && root.is_object())
    if (const auto* found = root.get_object().if_contains("search"); found && found->is_object())
      search = &found->get_object();
  if (!search) throw std::runtime_error(path.string() + ": not a search history written by `retrace sweep --find`");
  FindSummary summary;
  described_json::read_object(*search, summary);
  judge(summary);
  return summary;
}

bool run_find(Plan& plan, FindSummary& summary, const fs::path& dir, const FindIo& io) {
  std::ostream& log = io.log ? *io.log : std::cerr;
  const auto slo = summary.slo.empty() ? metrics::Slo{} : replay::parse_slo(summary.slo);
  LoadedTrace input = replay::load_input(
      plan.trace, to_replay_options(plan.replay, plan.target, schedule_at(plan, summary.start), {}), log, "sweep");
  auto diff = diff_options(plan, false);
  auto checked = std::make_shared<const replay::Preflight>(replay::preflight(
      input, to_replay_options(plan.replay, plan.target, schedule_at(plan, summary.start), {})));
  for (const auto& note : checked->notes) log << "sweep: " << note << "\n";
  judge(summary);
  if (summary.runs > 0) log << "sweep: " << summary.runs << " runs already done; continuing the search\n";

  while (auto next = next_probe(summary)) {
    if (io.stop && io.stop->load()) return false;
    if (summary.runs >= summary.max_probes) break;
    const bool baseline = summary.runs == 0;
    std::size_t index = 1;
    for (const auto& probe : summary.probes)
      if (probe.level == next->level && probe.control == next->control) index = probe.runs.size() + 1;
    PlannedRun planned;
    planned.name = run_name(plan, next->level, next->control, index);
    planned.level = next->level;
    planned.repeat = static_cast<int>(index);
    planned.file = planned.name + ".rtrace";
    planned.baseline = baseline;
    auto existing = std::find_if(plan.runs.begin(), plan.runs.end(),
                                 [&](const PlannedRun& run) { return run.name == planned.name; });
    if (existing == plan.runs.end()) plan.runs.push_back(planned);  // else: an interrupted run, redone
    if (std::find(plan.levels.begin(), plan.levels.end(), next->level) == plan.levels.end())
      plan.levels.push_back(next->level);
    save_plan(plan, dir);

    auto options = to_replay_options(plan.replay, plan.target, schedule_at(plan, next->level),
                                     {{"run", planned.name},
                                      {std::string(to_string(plan.axis)), level_text(next->level)},
                                      {"search_role", baseline ? "baseline" : next->control ? "control" : "probe"}});
    options.input = plan.trace;
    options.preflight = checked;
    log << "sweep: probe " << (summary.runs + 1) << " (" << planned.name << "): " << to_string(plan.axis) << " "
        << level_text(next->level) << (next->control ? ", the baseline again as the control" : "") << " ..."
        << std::flush;
    // An open-loop run whose backlog (requests due by its schedule, not yet finished) keeps
    // growing is cut: the server cannot keep up. The floor: twice what a server meeting the
    // longest limit holds in flight at the schedule's mean rate (Little's law), at least 8.
    std::atomic<bool> cut{false}, stop_run{false};
    const auto due = plan.axis == Axis::concurrency ? std::vector<std::int64_t>{} : intended_offsets(input, options);
    double mean_rate = due.size() > 1 && due.back() > 0 ? double(due.size()) / (double(due.back()) / 1e9) : 0;
    BacklogWatch watch(std::max(8.0, mean_rate * longest_limit_s(slo) * 2));
    const auto started = std::chrono::steady_clock::now();
    double sampled_s = 0;
    auto on_progress = [&](const replay::Progress& progress) {
      if (io.stop && io.stop->load()) stop_run = true;
      if (due.empty()) return;
      double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      if (elapsed - sampled_s < 1) return;
      sampled_s = elapsed;
      auto now_ns = static_cast<std::int64_t>(elapsed * 1e9);
      auto due_now = std::upper_bound(due.begin(), due.end(), now_ns) - due.begin();
      if (watch.observe(double(due_now) - double(progress.done))) {
        cut = true;
        stop_run = true;
      }
    };
    auto result = replay::run_replay(input, options, dir / planned.file, &stop_run, on_progress);
    if (result.interrupted && !cut) {
      log << " interrupted\n";
      return false;
    }
    std::find_if(plan.runs.begin(), plan.runs.end(), [&](const PlannedRun& run) { return run.name == planned.name; })
        ->done = true;
    save_plan(plan, dir);
    const fs::path baseline_path = dir / plan.runs.front().file;
    auto outcome = measure(dir / planned.file, planned.name, slo, summary.attainment,
                           summary.stable && !baseline ? &baseline_path : nullptr, diff);
    outcome.oversaturated = cut;
    if (summary.stable && baseline) {  // the baseline against itself
      outcome.compared = outcome.requests - outcome.errors;
      outcome.differing = 0;
    }
    add_run(summary, next->level, next->control, outcome);
    save_history(summary, dir);
    for (const auto& probe : summary.probes)
      if (probe.level == next->level && probe.control == next->control)
        log << " " << report::find_probe_line(summary, probe) << "\n";
  }
  write_summaries(summary, dir);
  return true;
}

}  // namespace retrace::sweep
