// Running a sweep: replay each pending run, save the plan after each, then summarize the runs
// (summary_runs.cpp) and write the summaries. Only this file touches traffic.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <ostream>
#include <stdexcept>

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
  std::size_t sent_redacted = 0;
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
    sent_redacted += result.sent_redacted;
    save_plan(plan, dir);
    if (io.log) {
      char line[160];
      std::snprintf(line, sizeof line, " %zu requests, %zu errors, %.2f req/s, %.1f output tok/s\n",
                    result.stats.exchanges, result.stats.exchanges - result.stats.completed,
                    result.stats.requests_per_s, result.stats.output_tokens_per_s);
      *io.log << line;
    }
  }
  if (io.log && sent_redacted) *io.log << "sweep: " << replay::sent_redacted_note(sent_redacted) << "\n";
  input = {};  // the requests sent: not needed by the summary, which streams every file it reads
  auto summary = summarize_sweep(plan, dir);
  write_private_file(dir / "summary.json", summary_to_json(summary));
  write_private_file(dir / "summary.md", summary_to_markdown(summary));
  write_private_file(dir / "summary.csv", summary_to_csv(summary));
  write_private_file(dir / "report.html", report::render_html(report::sweep_report(summary)));
  return summary;
}

}  // namespace retrace::sweep
