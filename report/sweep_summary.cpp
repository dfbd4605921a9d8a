// Sweep summary renderers: JSON (plain decimals, schema_version) and Markdown. Every count of
// differences carries its 95 % upper bound on the per-request rate; every throughput its 95 %
// confidence interval across repeats.
#include "report/sweep_summary.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include <boost/json.hpp>

#include "base/text.hpp"
#include "report/client.hpp"
#include "report/text.hpp"

namespace retrace::report {

namespace json = boost::json;

std::string level_text(double level) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", level);
  return text;
}

json::value level_json(double level) {
  if (level == std::floor(level) && std::abs(level) < 1e15) return static_cast<std::int64_t>(level);
  return level;
}

std::string level_place(const Summary& summary, double level) {
  return (summary.axis == "concurrency" ? std::string("c") : summary.axis) + "=" + level_text(level);
}

std::string sweep_client_line(const Summary& summary) {
  std::vector<metrics::PlacedClient> placed;
  for (const auto& run : summary.runs)
    placed.push_back({level_place(summary, run.level), "repeat " + std::to_string(run.repeat), run.client});
  return metrics::overall_line(placed);
}

bool Summary::any_differs() const {
  return std::any_of(levels.begin(), levels.end(),
                     [](const LevelSummary& level) { return level.differing_requests > 0; });
}

int severity_rank(diff::Classification classification) {
  switch (classification) {
    case diff::Classification::real_change: return 0;
    case diff::Classification::unknown: return 1;
    case diff::Classification::near_tie: return 2;
  }
  return 1;
}

void order_by_severity(std::vector<DivergenceEntry>& entries) {
  std::stable_sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) {
    return severity_rank(a.divergence.classification) < severity_rank(b.divergence.classification);
  });
}

std::string_view classification_name(diff::Classification classification) {
  switch (classification) {
    case diff::Classification::near_tie: return "near-tie";
    case diff::Classification::real_change: return "real change";
    case diff::Classification::unknown: break;
  }
  return "unclassified (no logprobs)";
}

namespace {

// A token for display: quoted, printable, quotes escaped, "(end of output)" when absent.
std::string show_token(const std::optional<diff::TokenView>& maybe_token) {
  if (!maybe_token) return "(end of output)";
  const auto& token = *maybe_token;
  // A text delta can be a whole non-streamed answer: show its start only.
  std::string out = "\"";
  for (char c : printable(token.bytes, 40)) {
    if (c == '"') out += '\\';
    out += c;
  }
  out += '"';
  if (token.id >= 0) out += " (id " + std::to_string(token.id) + ")";
  if (token.logprob) out += " lp " + fixed(*token.logprob, 3);
  return out;
}

json::value optional_count(const std::optional<std::size_t>& value) {
  return value ? json::value(*value) : json::value(nullptr);
}

json::object spread_json(const Spread& spread) {
  return {{"mean", spread.mean},
          {"min", spread.min},
          {"max", spread.max},
          {"stddev", spread.count > 1 ? json::value(spread.stddev) : json::value(nullptr)},
          {"spread_percent", spread.spread_percent},
          {"ci95_low", json_number(spread.ci_low)},
          {"ci95_high", json_number(spread.ci_high)},
          {"samples", spread.count}};
}

std::string of_n(std::size_t k, std::size_t n) {
  return std::to_string(k) + " of " + std::to_string(n);
}

std::string spread_cell(const Spread& spread) {
  std::string cell = fixed(spread.mean, 1) + " (" + fixed(spread.min, 1) + "–" +
                     fixed(spread.max, 1) + ", " + fixed(spread.spread_percent, 1) + "%";
  if (spread.ci_low) cell += "; 95% CI " + fixed(*spread.ci_low, 1) + "–" + fixed(*spread.ci_high, 1);
  return cell + ")";
}

json::value token_json(const std::optional<diff::TokenView>& view) {
  if (!view) return nullptr;  // that side's output ended here
  json::object out{{"id", json_count(view->id)}, {"bytes", view->bytes}};
  out["logprob"] = view->logprob ? json_float(*view->logprob) : json::value(nullptr);
  return out;
}

// The sweep's client as a whole: its line, whether it may have set the pace anywhere, and where.
json::object sweep_client_json(const Summary& summary) {
  json::array where;
  bool recorded = false;
  for (const auto& level : summary.levels) {
    recorded = recorded || level.client.usage;
    if (level.client.may_be_bottleneck()) where.push_back(level_json(level.level));
  }
  return overall_client_json(sweep_client_line(summary), recorded, std::move(where), "bottleneck_" + summary.axis);
}

}  // namespace

std::string describe_divergence(const diff::Divergence& divergence) {
  std::string out = "token " + std::to_string(divergence.baseline_index);
  if (divergence.candidate_index != divergence.baseline_index)
    out += "/" + std::to_string(divergence.candidate_index);
  out += " (byte " + std::to_string(divergence.byte_offset) + "): baseline " +
         show_token(divergence.baseline_token) + " vs " + show_token(divergence.candidate_token);
  if (divergence.margin) out += ", margin " + fixed(*divergence.margin, 4);
  out += " — " + std::string(classification_name(divergence.classification));
  if (divergence.basis == diff::Basis::bytes) out += " [compared bytes]";
  if (divergence.choice != 0) out += " [choice " + std::to_string(divergence.choice) + "]";
  return out;
}

std::string summary_to_json(const Summary& summary) {
  json::array levels;
  for (const auto& level : summary.levels) {
    json::object matches = level.matches_min
                               ? json::object{{"min", *level.matches_min}, {"max", *level.matches_max}}
                               : json::object{};
    levels.push_back(json::object{
        {summary.axis, level_json(level.level)},
        {"runs", level.runs},
        {"requests", level.requests},
        {"matches_expected", level.matches_min ? json::value(std::move(matches)) : json::value(nullptr)},
        {"differing_requests", level.differing_requests},
        {"differing_rate_upper95", json_number(clopper_pearson_upper(level.differing_requests, level.requests))},
        {"near_tie_requests", level.near_tie_requests},
        {"divergent_outputs", level.divergent_outputs},
        {"unique_completions", json::object{{"mean", level.unique_completions_mean},
                                            {"max", level.unique_completions_max},
                                            {"requests_varying", level.requests_varying}}},
        {"requests_per_s", spread_json(level.requests_per_s)},
        {"output_tokens_per_s", spread_json(level.output_tokens_per_s)},
        {"ttft_ms", json::object{{"p50", level.ttft.p50}, {"p99", level.ttft.p99}}},
        {"e2e_ms", json::object{{"p50", level.e2e.p50}, {"p99", level.e2e.p99}}},
        {"errors", level.errors},
        {"client", run_client_json(level.client)}});
  }
  json::array runs;
  for (const auto& run : summary.runs) {
    runs.push_back(json::object{{"name", run.name},
                                {"file", run.file},
                                {summary.axis, level_json(run.level)},
                                {"repeat", run.repeat},
                                {"baseline", run.baseline},
                                {"exchanges", run.exchanges},
                                {"errors", run.errors},
                                {"requests_per_s", run.requests_per_s},
                                {"output_tokens_per_s", run.output_tokens_per_s},
                                {"identical", run.identical},
                                {"divergent", run.divergent},
                                {"divergent_rate_upper95", json_number(clopper_pearson_upper(run.divergent, run.exchanges))},
                                {"near_ties", run.near_ties},
                                {"real_changes", run.real_changes},
                                {"missing", run.missing},
                                {"diff_errors", run.diff_errors},
                                {"not_compared", run.not_compared},
                                {"not_compared_why", run.not_compared_why},
                                {"matches_expected", optional_count(run.matches_expected)},
                                {"client", run_client_json(run.client)}});
  }
  json::array divergences;
  for (const auto& entry : summary.divergences) {
    const auto& divergence = entry.divergence;
    divergences.push_back(json::object{
        {summary.axis, level_json(entry.level)},
        {"run", entry.run},
        {"baseline_id", entry.baseline_id},
        {"key", entry.key},
        {"choice", divergence.choice},
        {"basis", divergence.basis == diff::Basis::token_ids ? "token_ids" : "bytes"},
        {"baseline_index", divergence.baseline_index},
        {"candidate_index", divergence.candidate_index},
        {"byte_offset", divergence.byte_offset},
        {"baseline_token", token_json(divergence.baseline_token)},
        {"candidate_token", token_json(divergence.candidate_token)},
        {"margin", json_number(divergence.margin)},
        {"classification", std::string(classification_name(divergence.classification))}});
  }
  json::object root{{"schema_version", kJsonSchemaVersion},
                    {"header", header_json(summary.header)},
                    {"trace", summary.trace},
                    {"target", summary.target},
                    {"baseline_run", summary.baseline_run},
                    {"axis", summary.axis},
                    {"differs", summary.any_differs()},
                    {"errors", summary.errors},
                    {"client", sweep_client_json(summary)},
                    {"levels", std::move(levels)},
                    {"runs", std::move(runs)},
                    {"divergences", std::move(divergences)}};
  return json_text(root) + "\n";
}

std::string levels_table(const Summary& summary) {
  std::ostringstream out;
  out << "| " << summary.axis << " | runs | match expected | differ from baseline (95% bound on rate) | unique "
         "completions (mean, max) | req/s | output tok/s | TTFT p50 / p99 ms | e2e p50 / p99 ms | "
         "errors |\n"
      << "|---:|---:|---|---|---|---|---|---|---|---:|\n";
  for (const auto& level : summary.levels) {
    std::string match = "—";
    if (level.matches_min) {
      match = *level.matches_min == *level.matches_max
                  ? of_n(*level.matches_min, level.requests)
                  : std::to_string(*level.matches_min) + "–" + of_n(*level.matches_max, level.requests);
    }
    out << "| " << level_text(level.level) << " | " << level.runs << " | " << match << " | "
        << of_n(level.differing_requests, level.requests) << " ("
        << rate_bound_text(level.differing_requests, level.requests);
    if (level.differing_requests > 0) out << "; " << level.near_tie_requests << " near-ties";
    out << ") | " << fixed(level.unique_completions_mean, 2) << ", " << level.unique_completions_max
        << " (" << level.requests_varying << " vary) | " << spread_cell(level.requests_per_s) << " | "
        << spread_cell(level.output_tokens_per_s) << " | " << fixed(level.ttft.p50, 1) << " / "
        << fixed(level.ttft.p99, 1) << " | " << fixed(level.e2e.p50, 1) << " / "
        << fixed(level.e2e.p99, 1) << " | " << level.errors << " |\n";
  }
  return out.str();
}

std::string divergence_list(const Summary& summary, std::size_t at_most) {
  std::ostringstream out;
  if (summary.divergences.empty()) out << "None: every output matches the baseline.\n";
  for (const auto& entry : most_severe(summary.divergences, at_most))
    out << "- `" << entry.run << "` request " << entry.baseline_id << " (key "
        << entry.key.substr(0, 12) << "): " << describe_divergence(entry.divergence) << "\n";
  if (summary.divergences.size() > at_most)
    out << "- … and " << (summary.divergences.size() - at_most) << " more\n";
  return out.str();
}

std::string summary_to_markdown(const Summary& summary) {
  std::ostringstream out;
  out << "# retrace sweep\n\n"
      << header_line(summary.header) << "\n\n"
      << "trace `" << summary.trace << "` → target `" << summary.target << "`; baseline: run `"
      << summary.baseline_run << "`.\n"
      << "N = requests per run. \"differ\" counts requests whose output differs from the baseline in "
         "any repeat, with the 95% upper confidence bound on the per-request rate (Clopper–Pearson); "
         "throughput is mean (min–max, spread = (max−min)/mean; 95% CI of the mean, Student t) "
         "across repeats; latency percentiles pool every repeat.\n\n"
      << sweep_client_line(summary) << "\n\n";
  out << levels_table(summary);

  out << "\n## Runs\n\n| run | requests | errors | req/s | output tok/s | identical | divergent | "
         "near-ties | match expected | client |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n";
  for (const auto& run : summary.runs) {
    out << "| " << run.name << (run.baseline ? " (baseline)" : "") << " | " << run.exchanges
        << " | " << run.errors << " | " << fixed(run.requests_per_s, 2) << " | "
        << fixed(run.output_tokens_per_s, 1) << " | " << run.identical << " | " << run.divergent
        << " (" << rate_bound_text(run.divergent, run.exchanges) << ") | " << run.near_ties << " | "
        << (run.matches_expected ? std::to_string(*run.matches_expected) : "—") << " | "
        << run.client.line() << " |\n";
  }
  for (const auto& run : summary.runs)  // never counted identical or divergent above
    if (run.not_compared > 0) out << "\n" << run.name << ": " << run.not_compared_why << "\n";

  out << "\n## Divergences from the baseline (first divergent token, real changes first)\n\n"
      << divergence_list(summary, summary.divergences.size());
  if (summary.errors > 0)
    out << "\n**" << summary.errors
        << " request(s) failed**; see the run traces (`retrace inspect RUN`). Results are incomplete.\n";
  return out.str();
}

}  // namespace retrace::report
