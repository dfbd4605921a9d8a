// The HTML report's model of a study: one target's (a column per cell) and several targets' (a
// column per target and cell), with the scope, the NOT GREEDY warnings, the part that diverged
// first per cell and, for several targets, the price of repeatability.
#include "report/html.hpp"
#include "report/study_internal.hpp"
#include "report/study_targets.hpp"
#include "version.hpp"

namespace retrace::report {

namespace study_detail {

std::string plain(const std::string& markdown) {
  std::string out;
  for (char c : markdown)
    if (c != '*' && c != '`') out += c;
  return out;
}

}  // namespace study_detail

namespace {

using study_detail::plain;

HtmlReport study_page(const std::string& title, const ReportHeader& header) {
  HtmlReport report;
  report.kind = "sweep";  // the same sections as a sweep's, a column per cell
  report.title = title;
  report.header = header;
  report.generator = kToolVersion;
  return report;
}

// Each cell of `summary` as a column of the report, its label prefixed by `prefix`.
void add_cells(HtmlReport& report, const StudySummary& summary, const std::string& prefix) {
  for (const auto& cell : summary.cells) {
    HtmlSeries series;
    series.label = prefix + study_detail::cell_label(cell);
    series.requests_per_s = cell.requests_per_s;
    series.output_tokens_per_s = cell.output_tokens_per_s;
    series.latency = cell.latency;
    series.requests = cell.compared;
    series.differing = cell.differing;
    series.near_ties = cell.near_ties;
    if (cell.client.usage) series.client = cell.client.line() + " (the most loaded of its runs)";
    report.series.push_back(std::move(series));
    report.first_divergence_positions.insert(report.first_divergence_positions.end(),
                                             cell.first_divergence.begin(), cell.first_divergence.end());
  }
}

}  // namespace

HtmlReport study_report(const StudySummary& summary) {
  HtmlReport report = study_page("retrace study report", summary.header);
  if (auto banner = sampling_banner(summary); !banner.empty()) report.notes.push_back(plain(banner));
  report.paragraphs.push_back(plain(study_scope(summary)));
  report.paragraphs.push_back(study_client_line(summary));
  report.tables.push_back(study_parts_table(summary));
  add_cells(report, summary, "");
  report.divergences = summary.divergences;
  return report;
}

HtmlTable study_parts_table(const StudySummary& summary) {
  HtmlTable table{"parts", "Part diverging first",
                  "Of each cell's outputs that differ from the baseline, how many first diverged in each part.",
                  {"cell", "differ", "part diverging first"}, {}};
  for (const auto& cell : summary.cells)
    table.rows.push_back({study_detail::cell_label(cell), std::to_string(cell.differing) + " of " +
                          std::to_string(cell.compared), first_parts_text(cell.first_parts)});
  return table;
}

HtmlReport study_targets_report(const StudyTargets& study) {
  HtmlReport report = study_page("retrace study report: " + std::to_string(study.targets.size()) + " targets",
                                 study.targets.front().header);
  if (auto text = study_detail::banners(study); !text.empty()) report.notes.push_back(plain(text));
  report.paragraphs.push_back(plain(study_targets_scope(study)));
  for (std::size_t i = 0; i < study.targets.size(); ++i)
    report.paragraphs.push_back(target_label(study, i) + ": " + study_client_line(study.targets[i]));
  report.tables.push_back({"price", "Price of repeatability",
                           "Throughput beside the difference rate against the target's own baseline, per target and cell.",
                           study_detail::kPriceColumns, study_detail::price_rows(study)});
  report.tables.push_back({"across", "Across targets", "Each target's baseline against target 1's.",
                           study_detail::kAcrossColumns, study_detail::across_rows(study)});
  for (std::size_t i = 0; i < study.targets.size(); ++i) {
    const auto& target = study.targets[i];
    auto parts = study_parts_table(target);
    parts.id += "-" + std::to_string(i + 1);
    parts.title += ": " + target_label(study, i);
    report.tables.push_back(std::move(parts));
    add_cells(report, target, "t" + std::to_string(i + 1) + " ");
    for (auto entry : target.divergences) {
      entry.run = study.dirs.at(i) + "/" + entry.run;
      report.divergences.push_back(std::move(entry));
    }
  }
  return report;
}

}  // namespace retrace::report
