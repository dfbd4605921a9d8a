// Builders of the HTML report's model: from a sweep's summary, from one run's trace, and from a
// baseline trace with candidates (a diff).
#include <algorithm>
#include <map>

#include "report/html.hpp"
#include "report/server_charts.hpp"
#include "version.hpp"

namespace retrace::report {

namespace {

HtmlSeries series_of(const std::string& label, const metrics::Stats& stats, LatencySamples latency) {
  HtmlSeries series;
  series.label = label;
  series.requests_per_s = spread_of({stats.requests_per_s});
  series.output_tokens_per_s = spread_of({stats.output_tokens_per_s});
  series.latency = std::move(latency);
  if (stats.client) series.client = stats.client->summary();
  return series;
}

// One run streamed for its series and its failed questions.
struct SeriesPass {
  StreamedRun run;
  HtmlSeries series;
};
SeriesPass series_pass(const std::filesystem::path& path, const std::string& label, const diff::Options& options,
                       ServerCharts* server = nullptr) {
  LatencySampler latency;
  StreamSinks sinks{.prepare = {}, .latency = &latency};
  if (server) sinks.scrapes = [server](const MetricScrape& scrape) { server->add(scrape); };
  auto run = stream_run(path, options, kShownFailedQuestions, sinks);
  auto series = series_of(label, run.stats, std::move(latency).finish());
  return {std::move(run), std::move(series)};
}

HtmlGold gold_of(const std::string& run, std::size_t matching, std::size_t total, const FailedQuestions& questions) {
  return {run, matching, total, questions.kept(), questions.left_out()};
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
    if (level.client.usage) series.client = level.client.line() + " (the most loaded of its runs)";
    report.series.push_back(std::move(series));
    add_errors(report.errors_by_kind, level.errors_by_kind);
  }
  report.paragraphs.push_back(sweep_client_line(summary));
  report.divergences = most_severe(summary.divergences, kShownDivergences);
  report.divergences_left_out = summary.divergences.size() - report.divergences.size();
  for (const auto& entry : summary.divergences)
    report.first_divergence_positions.push_back(entry.divergence.baseline_index);
  for (const auto& run : summary.runs)
    if (run.matches_expected)
      report.gold.push_back({run.name, *run.matches_expected, run.exchanges, run.failed, run.failed_left_out});
  return report;
}

HtmlReport run_report(const std::filesystem::path& path) {
  ServerCharts server;
  auto [run, series] = series_pass(path, path.filename().string(), diff::Options{}, &server);
  HtmlReport report;
  report.kind = "run";
  report.title = "retrace run report: " + path.filename().string();
  report.header = header_from_trace(run.header);
  if (report.header.trace.empty()) report.header.trace = path.string();
  report.generator = kToolVersion;
  report.series.push_back(std::move(series));
  report.errors_by_kind = run.stats.errors_by_kind;
  report.charts = server.charts(run.stats);
  report.charts_title = "The server over the run";
  const auto& questions = run.questions;
  if (questions.with_expected() > 0)
    report.gold.push_back(gold_of(path.filename().string(), questions.with_expected() - questions.failed(),
                                  questions.with_expected(), questions));
  return report;
}

HtmlReport diff_report(const std::filesystem::path& baseline_path,
                       const std::vector<std::filesystem::path>& candidate_paths, diff::Options options) {
  // Each run streamed once for its figures, then diff's streaming compare over the files.
  const std::string baseline_name = "baseline " + baseline_path.filename().string();
  auto baseline = series_pass(baseline_path, baseline_name, options);
  std::vector<SeriesPass> candidates;
  for (const auto& path : candidate_paths) candidates.push_back(series_pass(path, path.filename().string(), options));
  options.expect = options.expect || baseline.run.questions.with_expected() > 0;
  auto result = diff::compare_files(baseline_path, candidate_paths, options);

  HtmlReport report;
  report.kind = "diff";
  report.title = "retrace diff report: " + baseline_path.filename().string() + " vs " +
                 std::to_string(candidates.size()) + " run" + (candidates.size() == 1 ? "" : "s");
  report.header = header_from_trace(baseline.run.header);
  if (report.header.trace.empty()) report.header.trace = baseline_path.string();
  report.generator = kToolVersion;
  report.notes = result.warnings;
  report.series.push_back(std::move(baseline.series));
  add_errors(report.errors_by_kind, baseline.run.stats.errors_by_kind);
  MostSevere divergences(kShownDivergences);
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    auto& series = candidates[i].series;
    const auto& run = result.runs[i];
    const std::string& name = series.label;  // the file's name, as the page calls the run
    series.requests = run.aligned + run.missing_in_candidate + run.missing_in_baseline;
    series.differing = run.divergent + run.errors + run.missing_in_candidate + run.missing_in_baseline + run.not_compared;
    series.near_ties = run.near_ties;
    add_errors(report.errors_by_kind, candidates[i].run.stats.errors_by_kind);
    for (const auto& pair : run.pairs)
      for (const auto& divergence : pair.divergences)
        divergences.add({0, name, pair.baseline_id.value_or(0), pair.key.hex(), divergence});
    if (run.matches_expected)
      report.gold.push_back(gold_of(name, *run.matches_expected, run.with_expected.value_or(0), candidates[i].run.questions));
    report.series.push_back(std::move(series));
  }
  report.divergences_left_out = divergences.seen();
  report.divergences = std::move(divergences).take();
  report.divergences_left_out -= report.divergences.size();
  if (result.baseline_matches_expected)
    report.gold.insert(report.gold.begin(), gold_of(baseline_name, *result.baseline_matches_expected,
                                                    result.baseline_with_expected.value_or(0), baseline.run.questions));
  report.first_divergence_positions = result.first_divergence_positions;
  return report;
}

}  // namespace retrace::report
