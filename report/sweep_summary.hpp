// A sweep's results as plain structs (filled by sweep/, rendered here), and their JSON and
// Markdown forms. The HTML form is report/html.hpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "diff/diff.hpp"
#include "replay/replay.hpp"
#include "report/header.hpp"
#include "metrics/statistics.hpp"

namespace retrace::report {

// Every latency sample of some exchanges, in milliseconds (for distributions, not percentiles).
struct LatencySamples {
  std::vector<double> ttft_ms, itl_ms, e2e_ms;
};
LatencySamples latency_samples(const std::vector<replay::ExchangeMetrics>& metrics);

// A question whose output did not match its expected answer.
struct FailedQuestion {
  std::uint64_t id = 0;
  std::string expected, output;
};

// The exchanges carrying an expected answer that their output does not match under `options`.
std::vector<FailedQuestion> failed_questions(const std::vector<Exchange>& exchanges, const diff::Options& options);

struct RunFigures {
  std::string name;
  std::string file;
  double level = 1;  // on Summary::axis
  int repeat = 1;
  bool baseline = false;
  std::size_t exchanges = 0, errors = 0;
  double requests_per_s = 0, output_tokens_per_s = 0;
  // Against the baseline (diff::RunComparison of this run):
  std::size_t identical = 0, divergent = 0, near_ties = 0, real_changes = 0, missing = 0,
              diff_errors = 0;
  // Exchanges diff could not compare (neither identical nor divergent), and why
  // (diff::not_compared_text: "N not compared (reason: count; ...)"; "" when none).
  std::size_t not_compared = 0;
  std::string not_compared_why;
  std::optional<std::size_t> matches_expected;
  std::vector<FailedQuestion> failed;  // with expected answers: the questions not matched
};

struct LevelSummary {
  double level = 1;  // on Summary::axis
  std::size_t runs = 0;
  std::size_t requests = 0;  // baseline exchanges: the N of "k of N"
  // Matching the expected answer: fewest and most across this level's repeats.
  std::optional<std::size_t> matches_min, matches_max;
  // Distinct requests whose output differs from the baseline in at least one repeat, and those of
  // them whose every divergence is a near-tie flip.
  std::size_t differing_requests = 0, near_tie_requests = 0;
  std::size_t divergent_outputs = 0;  // summed over repeats
  // Unique completions among this level's repeats, per request.
  double unique_completions_mean = 0;
  std::size_t unique_completions_max = 0;
  std::size_t requests_varying = 0;  // more than one completion across the repeats
  Spread requests_per_s, output_tokens_per_s;
  replay::Percentiles ttft, e2e;  // pooled over the repeats' exchanges
  std::size_t errors = 0;
  std::vector<std::pair<std::string, std::size_t>> errors_by_kind;  // pooled
  LatencySamples latency;  // pooled; for the HTML report's distributions
};

struct DivergenceEntry {
  double level = 1;  // on Summary::axis
  std::string run;
  std::uint64_t baseline_id = 0;
  std::string key;
  diff::Divergence divergence;
};

struct Summary {
  ReportHeader header;  // of the baseline run
  std::string axis = "concurrency";  // what the levels are: concurrency, rate (req/s) or speed
  std::string trace, target;
  std::string baseline_run;
  std::vector<LevelSummary> levels;
  std::vector<RunFigures> runs;
  std::vector<DivergenceEntry> divergences;
  std::size_t errors = 0;
  bool any_differs() const;
};

// A sweep level as written in run names, tables and CSV: "16", "0.5", "2.5" (%.6g).
std::string level_text(double level);
// A level in JSON: an integer when it is one (16, not 16.0), else its shortest decimal.
boost::json::value level_json(double level);

// Real changes first, then unclassified ones, then near-ties; stable otherwise.
void order_by_severity(std::vector<DivergenceEntry>& entries);
int severity_rank(diff::Classification classification);  // 0 real change, 1 unknown, 2 near-tie

std::string summary_to_json(const Summary& summary);
std::string summary_to_markdown(const Summary& summary);
// One CSV row per level (throughput mean, stddev and 95 % CI; latency; errors; differing requests
// with their bound; gold matching), under a header row.
std::string summary_to_csv(const Summary& summary);
std::string levels_table(const Summary& summary);  // the per-level Markdown table alone
// Divergences as Markdown list items, at most `at_most` of them (real changes first).
std::string divergence_list(const Summary& summary, std::size_t at_most);
// One divergence as a line: where, token index on each side, the two tokens, margin, class.
std::string describe_divergence(const diff::Divergence& divergence);
std::string_view classification_name(diff::Classification classification);

}  // namespace retrace::report
