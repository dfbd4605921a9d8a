// A study of several targets: each target's plan and settings in its own sub-directory (the same
// requests and matrix, its own baseline and control), run one target after the other, resumable
// per target; then their baselines compared with the first target's, and the study's summaries
// (the price of repeatability) written beside the targets' own.
#include <iostream>
#include <set>
#include <stdexcept>

#include "base/ascii.hpp"
#include "base/private_file.hpp"
#include "report/study_targets.hpp"
#include "sweep/study.hpp"

namespace retrace::sweep {

namespace fs = std::filesystem;

std::vector<std::string> parse_targets(const std::vector<std::string>& given) {
  if (given.empty()) throw std::invalid_argument("a study needs --target URL (one or more)");
  std::set<std::string> seen;
  for (const auto& target : given) {
    std::string_view plain = target;
    while (!plain.empty() && plain.back() == '/') plain.remove_suffix(1);
    if (!seen.insert(ascii_lower(plain)).second)
      throw std::invalid_argument("--target " + target +
                                  " is given twice: each target of a study is a different server or "
                                  "configuration (to run one again, use --repeat)");
  }
  return given;
}

std::string target_dir(std::size_t index) { return "target-" + std::to_string(index + 1); }

void prepare_targets(const Plan& plan, const StudySettings& settings, const fs::path& dir, bool fresh) {
  for (std::size_t i = 0; i < settings.targets.size(); ++i) {
    fs::path sub = dir / target_dir(i);
    if (!fresh && fs::exists(sub / "plan.json") && fs::exists(sub / "study.json")) continue;
    create_private_directories(sub);
    Plan one = plan;
    one.target = settings.targets[i];
    StudySettings own = settings;
    own.targets = {settings.targets[i]};
    save_plan(one, sub);
    save_study(own, sub);
  }
}

namespace {

report::StudyAcross compare_baselines(const Plan& plan, const fs::path& first, const fs::path& other) {
  LoadedTrace baseline = load_trace(first);
  LoadedTrace candidate = load_trace(other);
  auto result = diff::compare(baseline, {&candidate}, {other.parent_path().filename().string()},
                              diff_options(plan, false));
  const auto& run = result.runs.at(0);
  report::StudyAcross across;
  across.compared = run.identical + run.divergent;
  across.differing = run.divergent;
  across.near_ties = run.near_ties;
  across.real_changes = run.real_changes;
  across.unclassified = run.unknown_changes;
  for (const auto& pair : run.pairs)
    if (pair.verdict == diff::Verdict::divergent) ++across.first_parts[report::first_part_key(pair.divergences)];
  return across;
}

// The targets' summaries, in order, made into the study's: dirs named, baselines compared.
report::StudyTargets combine(const Plan& plan, std::vector<report::StudySummary> summaries, const fs::path& dir) {
  report::StudyTargets study;
  study.targets = std::move(summaries);
  study.across.resize(study.targets.size());
  for (std::size_t i = 0; i < study.targets.size(); ++i) {
    study.dirs.push_back(target_dir(i));
    if (i > 0)
      study.across[i] = compare_baselines(plan, dir / target_dir(0) / plan.runs.front().file,
                                          dir / target_dir(i) / plan.runs.front().file);
  }
  return study;
}

void write_summaries(const report::StudyTargets& study, const fs::path& dir) {
  write_private_file(dir / "summary.json", report::study_targets_to_json(study));
  write_private_file(dir / "summary.md", report::study_targets_to_markdown(study));
  write_private_file(dir / "summary.csv", report::study_targets_to_csv(study));
  write_private_file(dir / "report.html", report::render_html(report::study_targets_report(study)));
}

}  // namespace

std::optional<report::StudyTargets> run_study_targets(const StudySettings& settings, const fs::path& dir,
                                                      const SweepIo& io) {
  std::vector<report::StudySummary> summaries;
  for (std::size_t i = 0; i < settings.targets.size(); ++i) {
    fs::path sub = dir / target_dir(i);
    Plan plan = load_plan(sub);
    StudySettings own = load_study(sub);
    if (own.run_cache.size() != plan.runs.size())
      throw std::runtime_error((sub / "study.json").string() + " does not match plan.json's runs");
    if (io.log)
      *io.log << "study: target " << (i + 1) << " of " << settings.targets.size() << ": " << plan.target << " (in "
              << sub.string() << ")\n";
    auto summary = run_study(plan, own, sub, io);
    if (!summary) return std::nullopt;
    summaries.push_back(std::move(*summary));
  }
  auto study = combine(load_plan(dir / target_dir(0)), std::move(summaries), dir);
  write_summaries(study, dir);
  return study;
}

report::StudyTargets summarize_study_targets(const Plan& plan, const StudySettings& settings, const fs::path& dir) {
  std::vector<report::StudySummary> summaries;
  for (std::size_t i = 0; i < settings.targets.size(); ++i) {
    fs::path sub = dir / target_dir(i);
    summaries.push_back(summarize_study(load_plan(sub), load_study(sub), sub));
  }
  return combine(plan, std::move(summaries), dir);
}

std::pair<std::size_t, std::size_t> study_runs_left(const Plan& plan, const StudySettings& settings,
                                                    const fs::path& dir) {
  if (settings.targets.size() < 2) return {pending_runs(plan).size(), plan.runs.size()};
  std::size_t left = 0, total = 0;
  for (std::size_t i = 0; i < settings.targets.size(); ++i) {
    fs::path sub = dir / target_dir(i);
    Plan one = fs::exists(sub / "plan.json") ? load_plan(sub) : plan;
    left += pending_runs(one).size();
    total += one.runs.size();
  }
  return {left, total};
}

}  // namespace retrace::sweep
