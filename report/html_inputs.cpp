// Builders of the HTML report's model: from a sweep's summary, from one run's trace, and from a
// baseline trace with candidates (a diff).
#include <algorithm>
#include <map>

#include "report/html.hpp"
#include "version.hpp"

namespace retrace::report {

namespace {

HtmlSeries series_of(const std::string& label, const replay::Stats& stats, const std::vector<Exchange>& exchanges) {
  HtmlSeries series;
  series.label = label;
  series.requests_per_s = spread_of({stats.requests_per_s});
  series.output_tokens_per_s = spread_of({stats.output_tokens_per_s});
  std::vector<replay::ExchangeMetrics> metrics;
  metrics.reserve(exchanges.size());
  for (const auto& exchange : exchanges) metrics.push_back(replay::summarize(exchange));
  series.latency = latency_samples(metrics);
  if (stats.client) series.client = stats.client->summary();
  return series;
}

void add_errors(std::vector<std::pair<std::string, std::size_t>>& total,
                const std::vector<std::pair<std::string, std::size_t>>& more) {
  for (const auto& [kind, count] : more) {
    auto it = std::find_if(total.begin(), total.end(), [&](const auto& entry) { return entry.first == kind; });
    if (it == total.end()) total.emplace_back(kind, count);
    else it->second += count;
  }
}

}  // namespace

HtmlReport sweep_report(const Summary& summary) {
  HtmlReport report;
  report.kind = "sweep";
  report.title = "retrace sweep report";
  report.header = summary.header;
  report.generator = kToolVersion;
  for (const auto& level : summary.levels) {
    HtmlSeries series;
    series.label = (summary.axis == "concurrency" ? "c" : summary.axis + " ") + level_text(level.level);
    series.requests_per_s = level.requests_per_s;
    series.output_tokens_per_s = level.output_tokens_per_s;
    series.latency = level.latency;
    series.requests = level.requests;
    series.differing = level.differing_requests;
    series.near_ties = level.near_tie_requests;
    report.series.push_back(std::move(series));
    add_errors(report.errors_by_kind, level.errors_by_kind);
  }
  report.divergences = summary.divergences;
  for (const auto& entry : summary.divergences)
    report.first_divergence_positions.push_back(entry.divergence.baseline_index);
  for (const auto& run : summary.runs)
    if (run.matches_expected)
      report.gold.push_back({run.name, *run.matches_expected, run.exchanges, run.failed});
  return report;
}

HtmlReport run_report(const std::filesystem::path& path) {
  LoadedTrace trace = load_trace(path);
  auto stats = replay::compute_stats(trace.header, trace.exchanges);
  HtmlReport report;
  report.kind = "run";
  report.title = "retrace run report: " + path.filename().string();
  report.header = header_from_trace(trace.header);
  if (report.header.trace.empty()) report.header.trace = path.string();
  report.generator = kToolVersion;
  report.series.push_back(series_of(path.filename().string(), stats, trace.exchanges));
  report.errors_by_kind = stats.errors_by_kind;
  diff::Options options;
  auto failed = failed_questions(trace.exchanges, options);
  auto with_expected = std::count_if(trace.exchanges.begin(), trace.exchanges.end(),
                                     [](const Exchange& exchange) { return exchange.expected.has_value(); });
  if (with_expected > 0)
    report.gold.push_back({path.filename().string(), std::size_t(with_expected) - failed.size(),
                           std::size_t(with_expected), failed});
  return report;
}

HtmlReport diff_report(const std::filesystem::path& baseline_path,
                       const std::vector<std::filesystem::path>& candidate_paths, diff::Options options) {
  LoadedTrace baseline = load_trace(baseline_path);
  std::vector<LoadedTrace> candidates;
  std::vector<const LoadedTrace*> pointers;
  std::vector<std::string> names;
  candidates.reserve(candidate_paths.size());
  for (const auto& path : candidate_paths) {
    candidates.push_back(load_trace(path));
    names.push_back(path.filename().string());
  }
  for (const auto& candidate : candidates) pointers.push_back(&candidate);
  options.expect = options.expect || std::any_of(baseline.exchanges.begin(), baseline.exchanges.end(),
                                                 [](const Exchange& exchange) { return exchange.expected.has_value(); });
  auto result = diff::compare(baseline, pointers, names, options);

  HtmlReport report;
  report.kind = "diff";
  report.title = "retrace diff report: " + baseline_path.filename().string() + " vs " +
                 std::to_string(candidates.size()) + " run" + (candidates.size() == 1 ? "" : "s");
  report.header = header_from_trace(baseline.header);
  if (report.header.trace.empty()) report.header.trace = baseline_path.string();
  report.generator = kToolVersion;
  report.notes = result.warnings;
  auto baseline_stats = replay::compute_stats(baseline.header, baseline.exchanges);
  report.series.push_back(series_of("baseline " + baseline_path.filename().string(), baseline_stats, baseline.exchanges));
  add_errors(report.errors_by_kind, baseline_stats.errors_by_kind);
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    auto stats = replay::compute_stats(candidates[i].header, candidates[i].exchanges);
    auto series = series_of(names[i], stats, candidates[i].exchanges);
    const auto& run = result.runs[i];
    series.requests = run.aligned + run.missing_in_candidate + run.missing_in_baseline;
    series.differing = run.divergent + run.errors + run.missing_in_candidate + run.missing_in_baseline + run.not_compared;
    series.near_ties = run.near_ties;
    report.series.push_back(std::move(series));
    add_errors(report.errors_by_kind, stats.errors_by_kind);
    for (const auto& pair : run.pairs)
      for (const auto& divergence : pair.divergences)
        report.divergences.push_back({0, run.name, pair.baseline_id.value_or(0), pair.key.hex(), divergence});
    if (run.matches_expected)
      report.gold.push_back({run.name, *run.matches_expected, run.with_expected.value_or(0),
                             failed_questions(candidates[i].exchanges, options)});
  }
  if (result.baseline_matches_expected)
    report.gold.insert(report.gold.begin(), HtmlGold{"baseline " + baseline_path.filename().string(),
                                                     *result.baseline_matches_expected,
                                                     result.baseline_with_expected.value_or(0),
                                                     failed_questions(baseline.exchanges, options)});
  report.first_divergence_positions = result.first_divergence_positions;
  return report;
}

}  // namespace retrace::report
