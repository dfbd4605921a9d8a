// The self-contained HTML report (`retrace report`, and report.html beside a sweep's summary.md):
// one file, no network at view time — styles, SVG charts and a small script inline.
//
// Everything taken from traces (prompts, outputs, tokens, names) is untrusted text: it is
// HTML-escaped wherever it lands, and none of it goes into the <script>, which only reads the DOM.
// Charts are SVG drawn by retrace (report/svg.hpp says why). When the script has built its view it
// sets data-ready="1" on <body>; an uncaught error sets data-error instead (the browser test reads
// both).
#pragma once

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "diff/diff.hpp"
#include "report/header.hpp"
#include "metrics/statistics.hpp"
#include "report/study_summary.hpp"
#include "report/sweep_summary.hpp"

namespace retrace::report {

// One column of the report: a sweep level (its repeats pooled), or one run.
struct HtmlSeries {
  std::string label;  // "c16", or a run's name
  Spread requests_per_s, output_tokens_per_s;  // one sample per repeat
  LatencySamples latency;
  std::optional<std::size_t> requests, differing, near_ties;  // against the baseline, where compared
  std::optional<std::string> client;  // the client's headroom (metrics/client_usage.hpp), where measured
};

struct HtmlGold {
  std::string run;
  std::size_t matching = 0, total = 0;
  std::vector<FailedQuestion> failed;  // the first of them; the page shows kShownFailedQuestions
  std::size_t failed_left_out = 0;     // failed questions beyond those in `failed`
};

// A table of text cells shown as is (escaped): a study's price of repeatability, its parts.
struct HtmlTable {
  std::string id, title, caption;
  std::vector<std::string> columns;
  std::vector<std::vector<std::string>> rows;
};

struct HtmlReport {
  std::string kind = "run";  // "run", "sweep", "diff" or "search" (sweep --find) or "shadow" (retrace shadow): charts and tables only
  std::string title;
  ReportHeader header;
  std::string generator;  // the retrace version writing the report
  std::vector<HtmlSeries> series;
  std::vector<std::pair<std::string, std::size_t>> errors_by_kind;
  std::vector<DivergenceEntry> divergences;  // any order: shown real changes first, kShownDivergences of them
  std::size_t divergences_left_out = 0;      // divergences beyond those in `divergences`
  std::vector<std::size_t> first_divergence_positions;
  std::vector<HtmlGold> gold;
  std::vector<std::string> notes;  // warnings (torn tails and the like)
  std::vector<std::string> paragraphs;  // shown under the header: a study's scope
  std::vector<HtmlTable> tables;        // shown after the throughput section, in order
  std::string charts_title;             // the charts' section: kind "search"'s, or a run's server
  std::vector<std::string> charts;      // SVG drawn by report/svg.cpp; none: no section
};

std::string render_html(const HtmlReport& report);

// Builders. From a sweep's summary; from one run's trace; from a baseline trace and candidates
// (a diff). The trace builders stream the traces (TraceError when unreadable): one pass of each for
// its figures, distributions and failed questions (metrics::StatsBuilder, LatencySampler,
// FailedQuestions), and diff's streaming compare for a diff; memory does not grow with the runs
// but for diff's own (its summaries and the divergent pairs it keeps) and the divergences kept
// for the page (kShownDivergences).
HtmlReport sweep_report(const Summary& summary);
// From a study's summary: a column per cell, its scope (and NOT GREEDY warning) at the top.
HtmlReport study_report(const StudySummary& summary);
HtmlReport run_report(const std::filesystem::path& trace);
HtmlReport diff_report(const std::filesystem::path& baseline,
                       const std::vector<std::filesystem::path>& candidates, diff::Options options);

}  // namespace retrace::report
