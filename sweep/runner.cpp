// Running a sweep: replay each pending run, save the plan after each, then diff every level
// against the baseline and aggregate. Only this file touches traffic and trace files.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <ostream>
#include <stdexcept>
#include <unordered_map>

#include "base/private_file.hpp"
#include "replay/preflight.hpp"
#include "report/html.hpp"
#include "sweep/sweep.hpp"

namespace retrace::sweep {

namespace {

std::vector<Label> run_labels(const Plan& plan, const PlannedRun& run) {
  return {{"run", run.name},
          {std::string(to_string(plan.axis)), level_text(run.level)},
          {"repeat", std::to_string(run.repeat)},
          {"sweep_role", run.baseline ? "baseline" : "candidate"}};
}

}  // namespace

diff::Options diff_options(const Plan& plan, bool expect) {
  diff::Options options;
  options.near_tie = plan.near_tie;
  options.expect = expect;
  auto matcher = diff::parse_matcher(plan.match);
  if (!matcher)
    throw std::invalid_argument("--match '" + plan.match +
                                "': expected exact, normalized, contains, regex:RE or json:FIELD");
  options.match = matcher->first;
  options.match_arg = matcher->second;
  return options;
}

std::map<RequestKey, std::string> expected_by_key(const LoadedTrace& trace) {
  std::map<RequestKey, std::string> out;
  for (const auto& exchange : trace.exchanges)
    if (exchange.expected) out.emplace(exchange.key, *exchange.expected);
  return out;
}

void attach_expected(LoadedTrace& run, const LoadedTrace& input,
                     const std::map<RequestKey, std::string>& by_key) {
  std::unordered_map<std::uint64_t, const Exchange*> input_by_id;
  for (const auto& exchange : input.exchanges) input_by_id.emplace(exchange.id, &exchange);
  for (auto& exchange : run.exchanges) {
    if (exchange.expected) continue;
    const Exchange* source = nullptr;
    if (exchange.source_id) {
      auto it = input_by_id.find(*exchange.source_id);
      if (it != input_by_id.end()) source = it->second;
    }
    if (source && source->expected) {
      exchange.expected = source->expected;
      continue;
    }
    auto it = by_key.find(source ? source->key : exchange.key);
    if (it != by_key.end()) exchange.expected = it->second;
  }
}

std::optional<Summary> run_sweep(Plan& plan, const std::filesystem::path& dir, const SweepIo& io) {
  // Every run selects the same exchanges (only the schedule differs): read as replay reads.
  LoadedTrace input = replay::load_input(
      plan.trace, to_replay_options(plan.replay, plan.target, schedule_at(plan, plan.runs.front().level), {}),
      io.log ? *io.log : std::cerr, "sweep");
  // Check every run's options before any traffic flows: a bad flag fails at once, not at run 7.
  for (const auto& run : plan.runs)
    to_replay_options(plan.replay, plan.target, schedule_at(plan, run.level), {});
  diff_options(plan, false);
  // Once for every run: nothing answering, or an ambiguous model, stops the sweep before traffic.
  auto checked = std::make_shared<const replay::Preflight>(replay::preflight(
      input, to_replay_options(plan.replay, plan.target, schedule_at(plan, plan.runs.front().level), {})));
  if (io.log)
    for (const auto& note : checked->notes) *io.log << "sweep: " << note << "\n";

  auto pending = pending_runs(plan);
  std::size_t finished = plan.runs.size() - pending.size();
  if (io.log && finished > 0)
    *io.log << "sweep: " << finished << " of " << plan.runs.size()
            << " runs already done; continuing\n";
  for (std::size_t index : pending) {
    if (io.stop && io.stop->load()) return std::nullopt;
    auto& run = plan.runs[index];
    auto options = to_replay_options(plan.replay, plan.target, schedule_at(plan, run.level),
                                     run_labels(plan, run));
    options.input = plan.trace;
    options.preflight = checked;
    if (io.log)
      *io.log << "sweep: run " << (index + 1) << "/" << plan.runs.size() << " " << run.name
              << (run.baseline ? " (baseline)" : "") << ": " << to_string(plan.axis) << " "
              << level_text(run.level)
              << ", repeat " << run.repeat << " ..." << std::flush;
    auto result = replay::run_replay(input, options, dir / run.file, io.stop);
    if (result.interrupted) {
      if (io.log) *io.log << " interrupted\n";
      return std::nullopt;
    }
    run.done = true;
    save_plan(plan, dir);
    if (io.log) {
      char line[160];
      std::snprintf(line, sizeof line, " %zu requests, %zu errors, %.2f req/s, %.1f output tok/s\n",
                    result.stats.exchanges, result.stats.exchanges - result.stats.completed,
                    result.stats.requests_per_s, result.stats.output_tokens_per_s);
      *io.log << line;
    }
  }
  auto summary = summarize_sweep(plan, dir);
  write_private_file(dir / "summary.json", summary_to_json(summary));
  write_private_file(dir / "summary.md", summary_to_markdown(summary));
  write_private_file(dir / "summary.csv", summary_to_csv(summary));
  write_private_file(dir / "report.html", report::render_html(report::sweep_report(summary)));
  return summary;
}

Summary summarize_sweep(const Plan& plan, const std::filesystem::path& dir) {
  LoadedTrace input = load_requests(plan.trace);
  std::map<RequestKey, std::string> answers;
  if (!plan.answers_from.empty()) answers = expected_by_key(load_trace(plan.answers_from));

  const PlannedRun& baseline_run = plan.runs.front();
  LoadedTrace baseline = load_trace(dir / baseline_run.file);
  attach_expected(baseline, input, answers);
  bool expect = std::any_of(baseline.exchanges.begin(), baseline.exchanges.end(),
                            [](const Exchange& exchange) { return exchange.expected.has_value(); });
  auto options = diff_options(plan, expect);

  Summary summary;
  summary.trace = plan.trace;
  summary.target = plan.target;
  summary.baseline_run = baseline_run.name;
  summary.header = report::header_from_trace(baseline.header);
  if (summary.header.trace.empty()) summary.header.trace = plan.trace;
  // The baseline's own schedule is only the first level; the sweep's is every level.
  std::string levels;
  for (double level : plan.levels) levels += (levels.empty() ? "" : ",") + level_text(level);
  summary.axis = std::string(to_string(plan.axis));
  summary.header.schedule = summary.axis + " " + levels + " × " + std::to_string(plan.repeats) + " repeats";
  if (plan.axis == Axis::rate) summary.header.schedule += " (" + plan.arrival + " arrivals)";
  if (plan.axis == Axis::speed) summary.header.schedule += " (recorded timing)";
  summary.header.schedule += report::trace_controls(baseline.header);
  for (double level : plan.levels) {
    std::vector<const PlannedRun*> planned;
    for (const auto& run : plan.runs)
      if (run.level == level) planned.push_back(&run);
    std::sort(planned.begin(), planned.end(),
              [](const PlannedRun* a, const PlannedRun* b) { return a->repeat < b->repeat; });

    std::vector<LoadedTrace> runs;
    runs.reserve(planned.size());
    std::vector<const LoadedTrace*> candidates;
    std::vector<std::string> names;
    for (const auto* run : planned) {
      if (!run->done)
        throw std::runtime_error("run " + run->name + " has not finished; continue with --resume " +
                                 dir.string());
      runs.push_back(load_trace(dir / run->file));
      attach_expected(runs.back(), input, answers);
      names.push_back(run->name);
    }
    for (const auto& run : runs) candidates.push_back(&run);
    diff::Result result = diff::compare(baseline, candidates, names, options);

    std::vector<RunFigures> figures;
    std::vector<Exchange> pooled_exchanges;
    for (std::size_t i = 0; i < runs.size(); ++i) {
      auto stats = replay::compute_stats(runs[i].header, runs[i].exchanges);
      RunFigures run;
      run.name = planned[i]->name;
      run.file = planned[i]->file;
      run.level = level;
      run.repeat = planned[i]->repeat;
      run.baseline = planned[i]->baseline;
      run.exchanges = stats.exchanges;
      run.errors = stats.exchanges - stats.completed;
      run.requests_per_s = stats.requests_per_s;
      run.output_tokens_per_s = stats.output_tokens_per_s;
      if (i < result.runs.size()) {
        const auto& comparison = result.runs[i];
        run.identical = comparison.identical;
        run.divergent = comparison.divergent;
        run.near_ties = comparison.near_ties;
        run.real_changes = comparison.real_changes;
        run.missing = comparison.missing_in_candidate + comparison.missing_in_baseline;
        run.diff_errors = comparison.errors;
        run.not_compared = comparison.not_compared;
        run.not_compared_why = diff::not_compared_text(comparison);
          run.matches_expected = comparison.matches_expected;
      }
      if (expect) run.failed = report::failed_questions(runs[i].exchanges, options);
      summary.errors += run.errors;
      figures.push_back(run);
      pooled_exchanges.insert(pooled_exchanges.end(), runs[i].exchanges.begin(),
                              runs[i].exchanges.end());
    }
    auto pooled = replay::compute_stats(baseline.header, pooled_exchanges);
    summary.levels.push_back(summarize_level(level, result, figures, pooled));
    std::vector<replay::ExchangeMetrics> metrics;
    metrics.reserve(pooled_exchanges.size());
    for (const auto& exchange : pooled_exchanges) metrics.push_back(replay::summarize(exchange));
    summary.levels.back().latency = report::latency_samples(metrics);
    summary.levels.back().errors_by_kind = pooled.errors_by_kind;
    auto divergences = collect_divergences(level, result);
    summary.divergences.insert(summary.divergences.end(), divergences.begin(), divergences.end());
    summary.runs.insert(summary.runs.end(), figures.begin(), figures.end());
  }
  return summary;
}

}  // namespace retrace::sweep
