// A sweep's results as plain structs (filled by sweep/, rendered here), and their JSON and
// Markdown forms. The HTML form is report/html.hpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "diff/diff.hpp"
#include "metrics/stats.hpp"
#include "report/header.hpp"
#include "metrics/distribution.hpp"
#include "metrics/statistics.hpp"

namespace retrace::report {

// The latency distributions of some exchanges that completed, in milliseconds, for the HTML
// report's charts and tables: TTFT (first token-carrying event), every inter-token gap, end to end.
// Each is a metrics::Distribution's result: every sample up to its exact limit (a million), a
// histogram of bounded size above, so memory does not follow the number of exchanges or tokens.
struct LatencySamples {
  metrics::Percentiles ttft_ms, itl_ms, e2e_ms;
};
// Gathers them one exchange at a time.
class LatencySampler {
 public:
  void add(const metrics::ExchangeMetrics& exchange);
  LatencySamples finish() &&;

 private:
  metrics::Distribution ttft_, itl_, e2e_;
};
LatencySamples latency_samples(const std::vector<metrics::ExchangeMetrics>& metrics);

// How much of a long list a page shows in full; the rest is counted ("… and 49,980 more").
// Failed questions: 20, the size of the shipped gold set (every one of its misses still shows) and
// about what one table cell can hold before it stops being read; each is two texts of up to 200
// bytes. Divergences: 100 articles (real changes first), each a few KB with its token tables and
// alternatives: the page stays around a megabyte however many outputs differ, where the counts,
// the bounds and the chart of first-divergence positions describe the rest (`retrace diff --json`
// lists every one).
inline constexpr std::size_t kShownFailedQuestions = 20;
inline constexpr std::size_t kShownDivergences = 100;

// A question whose output did not match its expected answer.
struct FailedQuestion {
  std::uint64_t id = 0;
  std::string expected, output;
};

// The exchanges carrying an expected answer that their output does not match under `options`,
// gathered one at a time: the first `keep` kept whole (in trace order), the rest only counted.
class FailedQuestions {
 public:
  FailedQuestions(const diff::Options& options, std::size_t keep) : options_(options), keep_(keep) {}
  void add(const Exchange& exchange);
  std::size_t with_expected() const { return with_expected_; }
  std::size_t failed() const { return failed_; }
  const std::vector<FailedQuestion>& kept() const { return kept_; }
  std::size_t left_out() const { return failed_ - kept_.size(); }

 private:
  diff::Options options_;
  std::size_t keep_;
  std::size_t with_expected_ = 0, failed_ = 0;
  std::vector<FailedQuestion> kept_;
};

// One run trace read as a stream, once: its header, its figures (metrics::StatsBuilder), its
// failed questions (the first `keep_failed` kept), and each completed exchange's latencies into
// `latency` and its metrics into `pooled` where given (a sweep level's pooled figures). `prepare`
// sees each exchange first (a sweep attaches expected answers there). Throws TraceError when the
// file is not a readable trace; a torn tail ends the run (`recovery` says what was dropped).
struct StreamedRun {
  TraceHeader header;
  metrics::Stats stats;
  FailedQuestions questions;
  Recovery recovery;
};
struct StreamSinks {
  std::function<void(Exchange&)> prepare;
  LatencySampler* latency = nullptr;
  metrics::StatsBuilder* pooled = nullptr;
  std::function<void(const MetricScrape&)> scrapes = {};  // each /metrics scrape the trace holds
};
StreamedRun stream_run(const std::filesystem::path& path, const diff::Options& options,
                       std::size_t keep_failed, const StreamSinks& sinks = {});

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
  std::vector<FailedQuestion> failed;  // with expected answers: the first questions not matched
  std::size_t failed_left_out = 0;     // not matched beyond those in `failed`
  metrics::RunClient client;           // from the run's header; no figures in older traces
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
  metrics::Percentiles ttft, e2e;  // pooled over the repeats' exchanges
  std::size_t errors = 0;
  std::vector<std::pair<std::string, std::size_t>> errors_by_kind;  // pooled
  LatencySamples latency;  // pooled; for the HTML report's distributions
  metrics::RunClient client;  // the most loaded client among this level's repeats
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

// The first `at_most` divergences in that order, picked as they come: at most `at_most` of each
// class are held, the rest only counted, so a list of any length costs at most 3 × at_most entries.
class MostSevere {
 public:
  explicit MostSevere(std::size_t at_most) : at_most_(at_most) {}
  void add(const DivergenceEntry& entry);  // copied only when held
  std::size_t seen() const { return seen_; }
  std::vector<DivergenceEntry> take() &&;  // ordered by severity, at most `at_most`

 private:
  std::size_t at_most_, seen_ = 0;
  std::vector<DivergenceEntry> by_rank_[3];
};
// The same over a list held whole.
std::vector<DivergenceEntry> most_severe(const std::vector<DivergenceEntry>& entries, std::size_t at_most);

// Where a sweep's level is, as the client lines name it: "c=32", "rate=2.5", "speed=2".
std::string level_place(const Summary& summary, double level);
// The sweep's client in one line (metrics::overall_line over every run): the busiest run's
// headroom and every level where the client may have been the bottleneck.
std::string sweep_client_line(const Summary& summary);

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
