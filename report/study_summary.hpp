// A study's results as plain structs (filled by sweep/study_*.cpp, rendered here): the cells of
// concurrency × cache state, the control every cell is read against, the sampling audit and the
// scope paragraph written from them. JSON, Markdown and CSV forms; the HTML form is report/html.hpp.
//
// Counting rule: a cell's "outputs compared" are its runs' exchanges aligned with the baseline's
// and answered on both sides (identical or divergent); "differing" are the divergent ones. The
// 95 % bound is Clopper–Pearson on differing of compared (metrics/statistics.hpp), read as a
// per-request rate: the chance that one request's output differs from the baseline's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "report/header.hpp"
#include "metrics/statistics.hpp"
#include "report/sweep_summary.hpp"

namespace retrace::report {

// Every exchange's sampling as sent, counted: value text ("0", "0.7", "absent") -> exchanges.
struct SamplingAudit {
  std::size_t exchanges = 0;
  std::size_t greedy = 0;             // temperature 0 in the body as sent
  std::size_t temperature_unset = 0;  // no temperature: left to the server's defaults
  std::size_t sampled = 0;            // temperature above 0
  std::map<std::string, std::size_t> temperature, top_p, top_k, seed, n;
  bool all_greedy() const { return exchanges > 0 && greedy == exchanges; }
};

// Prompt-cache hits as the server reported them.
struct CacheFigures {
  std::size_t exchanges = 0;  // completed ones
  std::size_t reported = 0;   // of them, those whose response said how many tokens were cached
  std::size_t hits = 0;       // of those, with cached tokens > 0
  std::uint64_t cached_tokens = 0;
};

struct StudyCell {
  std::string name;  // "c16 warm"
  int concurrency = 1;
  std::string cache;  // "cold" or "warm"
  bool control = false;  // the baseline's own configuration: its difference rate is the noise floor
  std::string cache_method;  // how the state was made, e.g. "a fresh cache_salt per request"
  std::string cache_note;    // "" or why the state is not what the name says
  std::size_t runs = 0;
  std::size_t requests = 0;  // per run
  std::size_t compared = 0, differing = 0;  // outputs, over the cell's runs
  std::size_t near_ties = 0, real_changes = 0, unclassified = 0;  // of the differing
  std::size_t differing_requests = 0;  // distinct requests differing in any run
  // Distinct completions per prompt over every copy of it in every run of the cell.
  std::size_t prompts = 0, prompts_varying = 0, unique_max = 0;
  double unique_mean = 0;
  std::vector<std::size_t> first_divergence;  // token index of each differing output's first divergence
  // Of the differing outputs, which part diverged first (first_part_key): "reasoning" -> 2, ...
  // Its counts sum to `differing`.
  std::map<std::string, std::size_t> first_parts;
  Spread requests_per_s, output_tokens_per_s;
  metrics::Percentiles ttft, e2e;
  LatencySamples latency;  // pooled over the cell's runs, for the HTML report's distributions
  std::size_t errors = 0;
  CacheFigures cache_figures;
  metrics::RunClient client;  // the most loaded client among the cell's runs
};

struct StudyRunFigures {
  std::string name, file, cell;
  int repeat = 1;
  bool baseline = false;
  std::size_t exchanges = 0, errors = 0, compared = 0, differing = 0;
  double requests_per_s = 0, output_tokens_per_s = 0;
  CacheFigures cache_figures;
  metrics::RunClient client;  // from the run's header; no figures in older traces
};

struct StudySummary {
  ReportHeader header;  // of the baseline run
  std::string trace, target;
  std::string model;  // as the server named it in its responses ("" when none did)
  std::string server_kind, server_version, server_evidence;  // the preflight's identification
  std::size_t requests = 0;  // per run
  std::size_t prompts = 0;   // distinct prompts among them
  std::optional<std::size_t> same_prompt;
  std::vector<int> concurrency;
  std::vector<std::string> cache;
  int repeats = 1;
  bool greedy_forced = false;  // --greedy: temperature 0 set on every request
  SamplingAudit sampling;      // every run's exchanges, as sent
  std::string baseline_run;
  std::vector<StudyCell> cells;  // cells[0] is the control
  std::vector<StudyRunFigures> runs;
  std::vector<DivergenceEntry> divergences;  // level = the concurrency; run = the run's name
  std::size_t errors = 0;
  // Every run's compared outputs by the requests in flight when each was sent (report/
  // in_flight_breakdown.hpp): empty when no run's trace says (format 1.4 and older).
  std::vector<diff::InFlightTally> by_in_flight;
  diff::ServerTallies by_server;  // likewise by prefix-cache hit and preemption (format 1.6)
  std::size_t compared() const;
  std::size_t differing() const;
  bool any_differs() const { return differing() > 0; }
};

// The bound in the scope's words: "0 of 60 differed: the per-request rate is at most 4.9 % (95 %),
// not zero" (or "…: at most 9.1 % (95 %)" when some differed).
std::string bound_sentence(std::size_t k, std::size_t n);
// The paragraph at the top of every summary: what the study is direct evidence of, what it is not,
// and the bound; every part of it from the data.
std::string study_scope(const StudySummary& summary);
// "" for a greedy study; else the warning every output starts with.
std::string sampling_banner(const StudySummary& summary);
// Power-of-two buckets of first-divergence positions: ("0", 3), ("1", 0), ("2-3", 1), ...
std::vector<std::pair<std::string, std::size_t>> position_histogram(const std::vector<std::size_t>& positions);

// The key a differing output is counted under in StudyCell::first_parts: the part of its first
// divergence as diff names it in its JSON ("reasoning", "content", "refusal", "tool_call",
// "embedding"), "unknown" when diff gave no divergence.
std::string first_part_key(const std::vector<diff::Divergence>& divergences);
// "reasoning 2, content 1" in generation order (unknown last); "—" when none.
std::string first_parts_text(const std::map<std::string, std::size_t>& parts);

// The per-cell Markdown table alone (the demo prints it), and the differences as list items, at
// most `at_most` of them, real changes first.
std::string study_cells_table(const StudySummary& summary);
std::string study_divergence_list(const StudySummary& summary, std::size_t at_most);

// The study's client in one line (metrics::overall_line over every run, the baseline's included):
// the busiest run's headroom and every cell where the client may have been the bottleneck. And each
// cell's most loaded run's line, as Markdown list items.
std::string study_client_line(const StudySummary& summary);
std::string study_client_section(const StudySummary& summary);

std::string study_to_json(const StudySummary& summary);
std::string study_to_markdown(const StudySummary& summary);
std::string study_to_csv(const StudySummary& summary);  // one row per cell

}  // namespace retrace::report
