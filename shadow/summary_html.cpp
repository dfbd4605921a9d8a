// DIR/report.html: the verdict as report/'s self-contained page (kind "shadow": a header, charts,
// tables), rewritten with summary.json and summary.md. The excess (which may be below 0) is said in
// words; the chart draws the legs' rates, bars from 0.
#include <chrono>
#include <cstdio>

#include "base/clock.hpp"
#include "report/header.hpp"
#include "report/html.hpp"
#include "report/svg.hpp"
#include "shadow/summary.hpp"
#include "version.hpp"

namespace retrace::shadow {

namespace {

// A first-divergence bucket's label: "0", "1", "2–3", "4–7", ...
std::string bucket_label(std::size_t from) {
  if (from < 2) return std::to_string(from);
  return std::to_string(from) + "–" + std::to_string(2 * from - 1);
}

report::svg::Bar rate_bar(std::string label, const std::optional<metrics::Interval>& interval) {
  if (!interval) return {std::move(label), 0, std::nullopt, std::nullopt, {}};
  return {std::move(label), interval->estimate * 100, interval->low * 100, interval->high * 100, {}};
}

}  // namespace

std::string summary_html(const Verdict& verdict, const RunFacts& facts) {
  report::HtmlReport page;
  page.kind = "shadow";
  page.title = "retrace shadow: the candidate against the primary";
  page.generator = kToolVersion;
  page.header.server = facts.primary;
  page.header.tool_version = kToolVersion;
  page.header.trace = "none: live traffic";
  page.header.when = report::utc_time(
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::system().wall().time_since_epoch()).count());
  char elapsed[64];
  std::snprintf(elapsed, sizeof elapsed, "%.0f s", facts.elapsed_seconds);
  page.header.schedule = "live traffic, " + facts.state + " after " + elapsed + ", " +
                         std::to_string(facts.forwarded) + " requests answered";
  page.paragraphs.push_back(excess_text(verdict));
  if (auto gate = gate_text(verdict, facts); !gate.empty()) page.paragraphs.push_back(gate);
  page.paragraphs.push_back("Each pair's first divergent token and part: retrace diff on this directory.");

  page.charts_title = "Difference rates and where outputs first part";
  std::vector<report::svg::Bar> rates;
  for (std::size_t leg = 0; leg < 2; ++leg)
    if (verdict.legs[leg].enabled)
      rates.push_back(rate_bar(std::string(leg_name(leg)), leg == 0 ? verdict.control_rate : verdict.candidate_rate));
  page.charts.push_back(report::svg::bar_chart("Difference rate against the primary (%, 95 % interval)", "%", rates));
  for (std::size_t leg = 0; leg < 2; ++leg) {
    const auto& figures = verdict.legs[leg];
    if (!figures.enabled) continue;
    std::vector<report::svg::Bar> bars;
    for (auto [bucket, count] : figures.first_divergence)
      bars.push_back({bucket_label(bucket), double(count), std::nullopt, std::nullopt, {}});
    page.charts.push_back(report::svg::bar_chart(
        std::string(leg_name(leg)) + ": first divergent token index (log2 buckets)", "pairs", bars));
  }

  report::HtmlTable table;
  table.id = "verdict";
  table.title = "Verdict per leg";
  table.caption = "Each mirror leg against the primary; Δ: the mirror's figure minus the primary's, per pair.";
  table.columns = verdict_columns();
  for (std::size_t leg = 0; leg < 2; ++leg)
    if (verdict.legs[leg].enabled) table.rows.push_back(verdict_cells(verdict, leg));
  page.tables.push_back(std::move(table));
  return report::render_html(page);
}

}  // namespace retrace::shadow
