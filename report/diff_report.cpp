// Diff renderers. The terminal summary leads with counts, then each divergence as a two-line
// context view with the divergent tokens aligned in one column.
#include "report/diff_report.hpp"
#include "report/diff_internal.hpp"
#include "report/in_flight_breakdown.hpp"
#include "report/server_breakdown.hpp"

#include <algorithm>
#include <cstdio>
#include <iomanip>
#include <sstream>

#include <boost/json.hpp>

#include "metrics/statistics.hpp"
#include "report/sweep_summary.hpp"
#include "report/text.hpp"

namespace retrace::report {

using diff::Classification;
using diff::Divergence;
using diff::PairResult;
using diff::Result;
using diff::RunComparison;
using diff::TokenView;
using diff::Verdict;

namespace {


std::string percent(std::size_t part, std::size_t whole) {
  if (whole == 0) return "-";
  return fixed(100.0 * double(part) / double(whole), 2) + "%";
}

std::string token_label(const std::optional<TokenView>& token) {
  if (!token) return "(end)";
  std::string label = "\"" + printable(token->bytes) + "\"";
  if (token->id >= 0) label += " #" + std::to_string(token->id);
  if (token->logprob) label += " lp " + fixed(*token->logprob, 3);
  return label;
}

std::string alternatives(const TokenView& token, std::size_t limit) {
  std::string text;
  for (std::size_t i = 0; i < token.top.size() && i < limit; ++i) {
    if (i) text += ", ";
    text += "\"" + printable(token.top[i].bytes) + "\" " + fixed(token.top[i].logprob, 3);
  }
  return text;
}

std::string joined(const std::vector<TokenView>& tokens) {
  std::string text;
  for (const auto& token : tokens) text += printable(token.bytes);
  return text;
}

std::string margin_text(const Divergence& divergence) {
  if (!divergence.margin) return "no logprobs recorded";
  return std::string(divergence.margin_is_lower_bound ? ">= " : "") + fixed(*divergence.margin, 4) + " nats";
}


struct Styles {
  bool on = false;
  std::string bold() const { return on ? "\x1b[1m" : ""; }
  std::string red() const { return on ? "\x1b[31m" : ""; }
  std::string green() const { return on ? "\x1b[32m" : ""; }
  std::string yellow() const { return on ? "\x1b[33m" : ""; }
  std::string dim() const { return on ? "\x1b[2m" : ""; }
  std::string reset() const { return on ? "\x1b[0m" : ""; }
};

// The marked divergent token: coloured on a terminal, bracketed otherwise.
std::string marked(const std::optional<TokenView>& token, const std::string& colour, const Styles& styles) {
  std::string text = token ? printable(token->bytes) : "(end)";
  if (styles.on) return colour + "\x1b[7m" + text + styles.reset();
  return "[[" + text + "]]";
}

void context_lines(const Divergence& divergence, const Styles& styles, const std::string& indent,
                   std::ostream& out) {
  std::string before_a = joined(divergence.baseline_before), before_b = joined(divergence.candidate_before);
  std::size_t width_a = utf8_width(before_a), width_b = utf8_width(before_b);
  std::size_t width = std::max(width_a, width_b);
  out << indent << "baseline   " << std::string(width - width_a, ' ') << before_a
      << marked(divergence.baseline_token, styles.red(), styles) << joined(divergence.baseline_after) << "\n";
  out << indent << "candidate  " << std::string(width - width_b, ' ') << before_b
      << marked(divergence.candidate_token, styles.green(), styles) << joined(divergence.candidate_after) << "\n";
}

std::string exchange_ids(const PairResult& pair) {
  auto id = [](const std::optional<std::uint64_t>& value) { return value ? std::to_string(*value) : std::string("-"); };
  return id(pair.baseline_id) + " / " + id(pair.candidate_id);
}



std::string expected_text(const std::optional<std::size_t>& matching, const std::optional<std::size_t>& with) {
  if (!matching || !with) return "-";
  return std::to_string(*matching) + "/" + std::to_string(*with);
}

struct ShownPair {
  const RunComparison* run;
  const PairResult* pair;
};

int pair_rank(const PairResult& pair) {
  int rank = 2;
  for (const auto& divergence : pair.divergences) rank = std::min(rank, severity_rank(divergence.classification));
  return rank;
}

// Divergent pairs of every run, real changes first, then unclassified, then near-ties.
std::vector<ShownPair> divergent_by_severity(const Result& result) {
  std::vector<ShownPair> shown;
  for (const auto& run : result.runs)
    for (const auto& pair : run.pairs)
      if (pair.verdict == Verdict::divergent) shown.push_back({&run, &pair});
  std::stable_sort(shown.begin(), shown.end(),
                   [](const ShownPair& a, const ShownPair& b) { return pair_rank(*a.pair) < pair_rank(*b.pair); });
  return shown;
}

std::string id_list(const std::vector<std::uint64_t>& ids) {
  std::string text;
  for (auto id : ids) text += (text.empty() ? "" : ", ") + std::to_string(id);
  return text;
}

}  // namespace

std::string run_label(std::size_t run, const Result& result) {
  return run == 0 ? "baseline" : result.runs[run - 1].name;
}

std::string_view fail_on_name(diff::FailOn fail_on) {
  switch (fail_on) {
    case diff::FailOn::any: return "any";
    case diff::FailOn::real: return "real";
    case diff::FailOn::none: return "none";
  }
  return "?";
}

std::vector<std::pair<std::string, std::size_t>> position_buckets(const std::vector<std::size_t>& positions) {
  std::vector<std::size_t> counts;
  for (std::size_t position : positions) {
    std::size_t bucket = 0;
    for (std::size_t p = position; p > 0; p >>= 1) ++bucket;
    if (counts.size() <= bucket) counts.resize(bucket + 1, 0);
    ++counts[bucket];
  }
  std::vector<std::pair<std::string, std::size_t>> buckets;
  for (std::size_t bucket = 0; bucket < counts.size(); ++bucket) {
    if (counts[bucket] == 0) continue;
    std::string label = bucket == 0   ? "0"
                        : bucket == 1 ? "1"
                                      : std::to_string(1ull << (bucket - 1)) + "-" + std::to_string((1ull << bucket) - 1);
    buckets.emplace_back(label, counts[bucket]);
  }
  return buckets;
}

int diff_exit_code(const Result& result, const DiffRenderOptions& options) {
  return diff::failing_outputs(result, options.fail_on) > options.max_divergent ? 1 : 0;
}

namespace {

// The baseline's line, its expected answers, and the diff's warnings.
void terminal_baseline(const Result& result, const Styles& styles, std::ostream& out) {
  out << styles.bold() << "baseline " << result.baseline_name << styles.reset() << "  ("
      << result.baseline_exchanges << " exchanges";
  if (result.baseline_matches_expected)
    out << "; " << *result.baseline_matches_expected << " of " << *result.baseline_with_expected << " match expected";
  out << ")\n";
  if (!result.baseline_failing_expected.empty())
    out << "  not matching expected: exchange " << id_list(result.baseline_failing_expected) << "\n";
  for (const auto& warning : result.warnings) out << styles.yellow() << "warning: " << warning << styles.reset() << "\n";
}

// One candidate run's counts against the baseline.
void terminal_run(const RunComparison& run, const Styles& styles, std::ostream& out) {
  auto [differ, total] = differ_count(run);
  out << "\n" << styles.bold() << run.name << styles.reset() << "\n";
  out << "  " << (differ ? styles.red() : styles.green()) << differ << " of " << total
      << " differ from baseline" << styles.reset() << " (95% upper bound on the rate "
      << rate_bound_text(differ, total) << ")";
  if (run.matches_expected) out << "; " << *run.matches_expected << " of " << *run.with_expected << " match expected";
  out << "\n";
  if (!run.failing_expected.empty())
    out << "  not matching expected: exchange " << id_list(run.failing_expected) << "\n";
  out << "  identical " << run.identical << ", divergent " << run.divergent << " (near-tie " << run.near_ties
      << ", real change " << run.real_changes << ", unknown " << run.unknown_changes << "), errors " << run.errors
      << ", missing " << run.missing_in_candidate << " in candidate / " << run.missing_in_baseline
      << " in baseline\n";
  if (auto load = in_flight_sentence(in_flight_buckets(run.by_in_flight)); !load.empty())
    out << "  " << load << "\n";
  if (auto server = server_sentence(run.by_server); !server.empty()) out << "  " << server << "\n";
  if (run.not_compared > 0) {
    out << "  " << styles.yellow() << run.not_compared << " exchanges not compared" << styles.reset() << ":\n";
    for (const auto& [reason, count] : run.not_compared_why) out << "    " << count << "  " << reason << "\n";
  }
  out << styles.dim() << "  aligned by " << diff::to_string(run.alignment) << " (" << run.aligned << " pairs)"
      << styles.reset() << "\n";
  if (!run.alignment_note.empty()) out << styles.dim() << "  " << run.alignment_note << styles.reset() << "\n";
}

// Where one divergence is, the tokens on either side, and what follows it.
void terminal_divergence(const diff::Divergence& divergence, const Styles& styles, std::ostream& out) {
  if (divergence.part == Part::embedding) {
    out << "   " << divergence.values_differing << " of " << divergence.baseline_tokens << " values differ";
    if (divergence.largest_difference) out << ", largest difference " << *divergence.largest_difference;
    if (!divergence.basis_note.empty()) out << " (" << divergence.basis_note << ")";
    out << " -> " << classification_name(divergence.classification) << "\n";
    return;
  }
  out << "   token " << divergence.baseline_index << " / " << divergence.candidate_index << ", byte "
      << divergence.byte_offset << ", compared " << diff::to_string(divergence.basis);
  if (!divergence.basis_note.empty()) out << " (" << divergence.basis_note << ")";
  out << "\n";
  context_lines(divergence, styles, "   ", out);
  out << "   " << token_label(divergence.baseline_token) << " vs " << token_label(divergence.candidate_token)
      << "; margin " << margin_text(divergence) << " -> "
      << (divergence.classification == Classification::real_change ? styles.red() : styles.yellow())
      << classification_name(divergence.classification) << styles.reset() << "\n";
  if (divergence.baseline_token && !divergence.baseline_token->top.empty())
    out << "   baseline top: " << alternatives(*divergence.baseline_token, 5) << "\n";
  if (divergence.candidate_token && !divergence.candidate_token->top.empty())
    out << "   candidate top: " << alternatives(*divergence.candidate_token, 5) << "\n";
  std::string unit = divergence.basis == diff::Basis::token_ids ? " tokens" : " bytes";
  out << "   rest: common suffix " << divergence.common_suffix << unit << ", edit distance "
      << (divergence.edit_distance_capped ? ">" : "") << divergence.edit_distance << unit << "; lengths "
      << divergence.baseline_tokens << " / " << divergence.candidate_tokens << " tokens; finish "
      << (divergence.baseline_finish.empty() ? "-" : divergence.baseline_finish) << " / "
      << (divergence.candidate_finish.empty() ? "-" : divergence.candidate_finish) << "\n";
}

// The divergent pairs, most severe first, up to --show.
void terminal_divergences(const Result& result, const DiffRenderOptions& options, const Styles& styles,
                          std::ostream& out) {
  std::size_t shown = 0, total_divergent = 0;
  for (const auto& run : result.runs)
    for (const auto& pair : run.pairs) total_divergent += pair.verdict == Verdict::divergent;
  if (total_divergent) out << "\n" << styles.bold() << "divergences" << styles.reset() << "\n";
  for (const auto& [run, pair] : divergent_by_severity(result)) {
    if (shown >= options.show) break;
    ++shown;
    const std::string changed = diff::parts_changed(pair->divergences);
    for (const auto& divergence : pair->divergences) {
      out << "\n" << shown << ". " << run->name << "  exchange " << exchange_ids(*pair) << "  key "
          << pair->key.hex().substr(0, 12) << "  choice " << divergence.choice;
      if (divergence.part != Part::content) out << " " << diff::part_name(divergence, false);
      out << "\n";
      if (&divergence == &pair->divergences.front() && (pair->divergences.size() > 1 || divergence.part != Part::content))
        out << "   " << changed << "\n";
      terminal_divergence(divergence, styles, out);
    }
  }
  if (total_divergent > shown) out << "\n... " << total_divergent - shown << " more (--show N, or --json)\n";
}

// Errors, pairs not compared and exchanges missing on one side, up to --show.
void terminal_errors(const Result& result, const DiffRenderOptions& options, const Styles& styles, std::ostream& out) {
  std::size_t other_shown = 0;
  for (const auto& run : result.runs)
    for (const auto& pair : run.pairs) {
      if (pair.verdict == Verdict::divergent) continue;
      if (other_shown == 0) out << "\n" << styles.bold() << "errors and missing" << styles.reset() << "\n";
      if (other_shown++ >= options.show) continue;
      out << "  " << run.name << "  exchange " << exchange_ids(pair) << "  ";
      if (pair.verdict == Verdict::error) out << "error: " << pair.error << "\n";
      else if (pair.verdict == Verdict::not_compared) out << "not compared: " << pair.error << "\n";
      else out << (pair.baseline_id ? "missing in the candidate\n" : "missing in the baseline\n");
    }
  if (other_shown > options.show) out << "  ... " << other_shown - options.show << " more (--show N, or --json)\n";
}

// Several runs: distinct completions per request, where the first divergence falls, the matrix.
void terminal_across_runs(const Result& result, const DiffRenderOptions& options, const Styles& styles,
                          std::ostream& out) {
  if (result.runs.size() <= 1 && result.first_divergence_positions.empty()) return;
  out << "\n" << styles.bold() << "across runs" << styles.reset() << "\n  requests by distinct completions:";
  for (const auto& [unique, count] : result.unique_completions_histogram) out << "  " << unique << ": " << count;
  out << "\n";
  if (!result.first_divergence_positions.empty()) {
    out << "  first divergence at token:";
    for (const auto& [label, count] : position_buckets(result.first_divergence_positions))
      out << "  " << label << ": " << count;
    out << "\n";
  }
  for (std::size_t i = 0; i < result.requests.size() && i < options.show; ++i) {
    const auto& request = result.requests[i];
    out << "  baseline exchange " << request.baseline_id << ": " << request.groups.size() << " completions:";
    for (const auto& group : request.groups) {
      out << " {";
      for (std::size_t m = 0; m < group.size(); ++m) out << (m ? ", " : "") << run_label(group[m], result);
      out << "}";
    }
    out << "\n";
  }
  if (result.baseline_exchanges > 120) return;
  const bool any_not_compared =
      std::any_of(result.runs.begin(), result.runs.end(), [](const auto& run) { return run.not_compared > 0; });
  out << "  runs x requests ('.' identical, D divergent, E error, M missing"
      << (any_not_compared ? ", N not compared" : "") << "):\n";
  for (const auto& run : result.runs) out << "    " << run.matrix << "  " << run.name << "\n";
}

}  // namespace

void render_diff_terminal(const Result& result, const DiffRenderOptions& options, std::ostream& out) {
  Styles styles{options.color};
  terminal_baseline(result, styles, out);
  for (const auto& run : result.runs) terminal_run(run, styles, out);
  terminal_divergences(result, options, styles, out);
  terminal_errors(result, options, styles, out);
  terminal_across_runs(result, options, styles, out);
  std::size_t failing = diff::failing_outputs(result, options.fail_on);
  int code = diff_exit_code(result, options);
  out << "\n" << (code ? styles.red() : styles.green()) << (code ? "DIFFER" : "OK") << styles.reset() << ": "
      << failing << " output" << (failing == 1 ? "" : "s") << " count against --fail-on " << fail_on_name(options.fail_on);
  if (options.max_divergent) out << " (tolerating " << options.max_divergent << ")";
  out << "\n";
}

void render_diff_markdown(const Result& result, const DiffRenderOptions& options, std::ostream& out) {
  int code = diff_exit_code(result, options);
  out << "### retrace diff: " << (code ? "outputs differ" : "no differences") << "\n\n";
  out << "Baseline `" << result.baseline_name << "` (" << result.baseline_exchanges << " exchanges)";
  if (result.baseline_matches_expected)
    out << ", " << *result.baseline_matches_expected << " of " << *result.baseline_with_expected << " match expected";
  out << ".\n\n";
  out << "| run | differ | 95% bound on rate | identical | divergent | near-tie | real | unknown | errors | missing | expected |\n";
  out << "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const auto& run : result.runs) {
    auto [differ, total] = differ_count(run);
    out << "| `" << run.name << "` | " << differ << " of " << total << " (" << percent(differ, total) << ") | " << rate_bound_text(differ, total) << " | "
        << run.identical << " | " << run.divergent << " | " << run.near_ties << " | " << run.real_changes << " | "
        << run.unknown_changes << " | " << run.errors << " | " << run.missing_in_candidate + run.missing_in_baseline
        << " | " << expected_text(run.matches_expected, run.with_expected) << " |\n";
  }
  for (const auto& run : result.runs)
    if (!run.failing_expected.empty())
      out << "\n`" << run.name << "`: not matching expected: exchange " << id_list(run.failing_expected) << "\n";
  std::size_t shown = 0;
  for (const auto& [run_pointer, pair_pointer] : divergent_by_severity(result)) {
    const auto& run = *run_pointer;
    const auto& pair = *pair_pointer;
    {
      if (shown >= options.show) break;
      ++shown;
      for (const auto& divergence : pair.divergences) {
        out << "\n<details><summary>" << run.name << ": exchange " << exchange_ids(pair) << ", choice "
            << divergence.choice << ", token " << divergence.baseline_index << " / " << divergence.candidate_index
            << " — " << classification_name(divergence.classification) << " (margin " << margin_text(divergence)
            << ")</summary>\n\n```\n";
        context_lines(divergence, Styles{false}, "", out);
        out << "```\n\ncompared " << diff::to_string(divergence.basis);
        if (!divergence.basis_note.empty()) out << " (" << divergence.basis_note << ")";
        out << "; byte " << divergence.byte_offset << "; edit distance " << (divergence.edit_distance_capped ? ">" : "")
            << divergence.edit_distance << "; lengths " << divergence.baseline_tokens << " / "
            << divergence.candidate_tokens << "; finish " << divergence.baseline_finish << " / "
            << divergence.candidate_finish << "\n\n</details>\n";
      }
    }
  }
  std::size_t total_divergent = 0;
  for (const auto& run : result.runs) total_divergent += run.divergent;
  if (total_divergent > shown) out << "\n" << total_divergent - shown << " more divergences not shown.\n";
  for (const auto& warning : result.warnings) out << "\n> warning: " << warning << "\n";
}

}  // namespace retrace::report
