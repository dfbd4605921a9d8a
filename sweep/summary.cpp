// Sweep summary: per-level aggregation of diff results and run figures, and its JSON and Markdown
// forms. Pure functions over plain structs, so the arithmetic is testable without any traffic.
#include <algorithm>
#include <boost/json.hpp>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include "sweep/sweep.hpp"

namespace retrace::sweep {

namespace json = boost::json;

Spread spread_of(const std::vector<double>& samples) {
  Spread spread;
  if (samples.empty()) return spread;
  double sum = 0;
  spread.min = spread.max = samples.front();
  for (double sample : samples) {
    sum += sample;
    spread.min = std::min(spread.min, sample);
    spread.max = std::max(spread.max, sample);
  }
  spread.mean = sum / static_cast<double>(samples.size());
  if (samples.size() > 1 && spread.mean > 0)
    spread.spread_percent = (spread.max - spread.min) / spread.mean * 100.0;
  return spread;
}

bool Summary::any_differs() const {
  return std::any_of(levels.begin(), levels.end(),
                     [](const LevelSummary& level) { return level.differing_requests > 0; });
}

LevelSummary summarize_level(int concurrency, const diff::Result& level_diff,
                             const std::vector<RunFigures>& level_runs,
                             const replay::Stats& pooled) {
  LevelSummary level;
  level.concurrency = concurrency;
  level.runs = level_runs.size();
  level.requests = level_diff.baseline_exchanges;

  std::vector<double> request_rates, token_rates;
  for (const auto& run : level_runs) {
    request_rates.push_back(run.requests_per_s);
    token_rates.push_back(run.output_tokens_per_s);
    level.errors += run.errors;
    if (run.matches_expected) {
      level.matches_min = std::min(level.matches_min.value_or(*run.matches_expected),
                                   *run.matches_expected);
      level.matches_max = std::max(level.matches_max.value_or(0), *run.matches_expected);
    }
  }
  level.requests_per_s = spread_of(request_rates);
  level.output_tokens_per_s = spread_of(token_rates);

  // A request counts once however many repeats differ; it is a near-tie only when every one of
  // its divergences, in every repeat, is classified as one.
  std::map<std::uint64_t, bool> differing;  // baseline id -> all near-ties so far
  for (const auto& run : level_diff.runs) {
    level.divergent_outputs += run.divergent;
    for (const auto& pair : run.pairs) {
      if (pair.verdict != diff::Verdict::divergent || !pair.baseline_id) continue;
      bool near_tie = !pair.divergences.empty() &&
                      std::all_of(pair.divergences.begin(), pair.divergences.end(),
                                  [](const diff::Divergence& divergence) {
                                    return divergence.classification ==
                                           diff::Classification::near_tie;
                                  });
      auto [it, inserted] = differing.emplace(*pair.baseline_id, near_tie);
      if (!inserted) it->second = it->second && near_tie;
    }
  }
  level.differing_requests = differing.size();
  level.near_tie_requests = static_cast<std::size_t>(std::count_if(
      differing.begin(), differing.end(), [](const auto& entry) { return entry.second; }));

  // Unique completions among the repeats. diff lists only requests with more than one distinct
  // completion across baseline and candidates; every other request has exactly one. Groups count
  // when they hold a candidate (index >= 1): index 0 is the sweep's baseline, which is one of this
  // level's repeats only at the first level, where it is also listed as a candidate.
  std::size_t listed = 0, listed_total = 0;
  level.unique_completions_max = level.requests > 0 ? 1 : 0;
  for (const auto& request : level_diff.requests) {
    std::size_t unique = 0;
    for (const auto& group : request.groups)
      if (std::any_of(group.begin(), group.end(), [](std::size_t run) { return run >= 1; }))
        ++unique;
    ++listed;
    listed_total += unique;
    level.unique_completions_max = std::max(level.unique_completions_max, unique);
    if (unique > 1) ++level.requests_varying;
  }
  if (level.requests > 0) {
    std::size_t unlisted = level.requests > listed ? level.requests - listed : 0;
    level.unique_completions_mean =
        static_cast<double>(listed_total + unlisted) / static_cast<double>(level.requests);
  }

  level.ttft = pooled.ttft;
  level.e2e = pooled.e2e;
  return level;
}

std::vector<DivergenceEntry> collect_divergences(int concurrency, const diff::Result& level_diff) {
  std::vector<DivergenceEntry> entries;
  for (const auto& run : level_diff.runs)
    for (const auto& pair : run.pairs) {
      if (pair.verdict != diff::Verdict::divergent) continue;
      for (const auto& divergence : pair.divergences)
        entries.push_back(
            {concurrency, run.name, pair.baseline_id.value_or(0), pair.key.hex(), divergence});
    }
  return entries;
}

namespace {

std::string fixed(double value, int digits) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", digits, value);
  return buffer;
}

// A token for display: quoted, control bytes and quotes escaped, "(end)" when absent.
std::string show_token(const std::optional<diff::TokenView>& maybe_token) {
  if (!maybe_token) return "(end of output)";
  const auto& token = *maybe_token;
  std::string out = "\"";
  // A text delta can be a whole non-streamed answer: show its start only.
  constexpr std::size_t kShown = 40;
  std::string_view shown(token.bytes);
  bool cut = shown.size() > kShown;
  if (cut) shown = shown.substr(0, kShown);
  for (unsigned char c : shown) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      char buffer[8];
      std::snprintf(buffer, sizeof buffer, "\\x%02x", c);
      out += buffer;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += cut ? "\"…" : "\"";
  if (token.id >= 0) out += " (id " + std::to_string(token.id) + ")";
  if (token.logprob) out += " lp " + fixed(*token.logprob, 3);
  return out;
}

std::string_view classification_name(diff::Classification classification) {
  switch (classification) {
    case diff::Classification::near_tie: return "near-tie";
    case diff::Classification::real_change: return "real change";
    case diff::Classification::unknown: break;
  }
  return "unclassified (no logprobs)";
}

json::value optional_count(const std::optional<std::size_t>& value) {
  return value ? json::value(*value) : json::value(nullptr);
}

json::object spread_json(const Spread& spread) {
  return {{"mean", spread.mean},
          {"min", spread.min},
          {"max", spread.max},
          {"spread_percent", spread.spread_percent}};
}

std::string of_n(std::size_t k, std::size_t n) {
  return std::to_string(k) + " of " + std::to_string(n);
}

std::string spread_cell(const Spread& spread) {
  return fixed(spread.mean, 1) + " (" + fixed(spread.min, 1) + "–" + fixed(spread.max, 1) + ", " +
         fixed(spread.spread_percent, 1) + "%)";
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
        {"concurrency", level.concurrency},
        {"runs", level.runs},
        {"requests", level.requests},
        {"matches_expected", level.matches_min ? json::value(std::move(matches)) : json::value(nullptr)},
        {"differing_requests", level.differing_requests},
        {"near_tie_requests", level.near_tie_requests},
        {"divergent_outputs", level.divergent_outputs},
        {"unique_completions", json::object{{"mean", level.unique_completions_mean},
                                            {"max", level.unique_completions_max},
                                            {"requests_varying", level.requests_varying}}},
        {"requests_per_s", spread_json(level.requests_per_s)},
        {"output_tokens_per_s", spread_json(level.output_tokens_per_s)},
        {"ttft_ms", json::object{{"p50", level.ttft.p50}, {"p99", level.ttft.p99}}},
        {"e2e_ms", json::object{{"p50", level.e2e.p50}, {"p99", level.e2e.p99}}},
        {"errors", level.errors}});
  }
  json::array runs;
  for (const auto& run : summary.runs) {
    runs.push_back(json::object{{"name", run.name},
                                {"file", run.file},
                                {"concurrency", run.concurrency},
                                {"repeat", run.repeat},
                                {"baseline", run.baseline},
                                {"exchanges", run.exchanges},
                                {"errors", run.errors},
                                {"requests_per_s", run.requests_per_s},
                                {"output_tokens_per_s", run.output_tokens_per_s},
                                {"identical", run.identical},
                                {"divergent", run.divergent},
                                {"near_ties", run.near_ties},
                                {"real_changes", run.real_changes},
                                {"missing", run.missing},
                                {"diff_errors", run.diff_errors},
                                {"matches_expected", optional_count(run.matches_expected)}});
  }
  json::array divergences;
  for (const auto& entry : summary.divergences) {
    const auto& divergence = entry.divergence;
    auto token = [](const std::optional<diff::TokenView>& view) -> json::value {
      if (!view) return nullptr;  // that side's output ended here
      json::object out{{"id", view->id}, {"bytes", view->bytes}};
      out["logprob"] = view->logprob ? json::value(*view->logprob) : json::value(nullptr);
      return out;
    };
    divergences.push_back(json::object{
        {"concurrency", entry.concurrency},
        {"run", entry.run},
        {"baseline_id", entry.baseline_id},
        {"key", entry.key},
        {"choice", divergence.choice},
        {"basis", divergence.basis == diff::Basis::token_ids ? "token_ids" : "bytes"},
        {"baseline_index", divergence.baseline_index},
        {"candidate_index", divergence.candidate_index},
        {"byte_offset", divergence.byte_offset},
        {"baseline_token", token(divergence.baseline_token)},
        {"candidate_token", token(divergence.candidate_token)},
        {"margin", divergence.margin ? json::value(*divergence.margin) : json::value(nullptr)},
        {"classification", std::string(classification_name(divergence.classification))}});
  }
  json::object root{{"trace", summary.trace},
                    {"target", summary.target},
                    {"baseline_run", summary.baseline_run},
                    {"differs", summary.any_differs()},
                    {"errors", summary.errors},
                    {"levels", std::move(levels)},
                    {"runs", std::move(runs)},
                    {"divergences", std::move(divergences)}};
  return json::serialize(root) + "\n";
}

std::string levels_table(const Summary& summary) {
  std::ostringstream out;
  out << "| concurrency | runs | match expected | differ from baseline | unique completions "
         "(mean, max) | req/s | output tok/s | TTFT p50 / p99 ms | e2e p50 / p99 ms | errors |\n"
      << "|---:|---:|---|---|---|---|---|---|---|---:|\n";
  for (const auto& level : summary.levels) {
    std::string match = "—";
    if (level.matches_min) {
      match = *level.matches_min == *level.matches_max
                  ? of_n(*level.matches_min, level.requests)
                  : std::to_string(*level.matches_min) + "–" + of_n(*level.matches_max, level.requests);
    }
    out << "| " << level.concurrency << " | " << level.runs << " | " << match << " | "
        << of_n(level.differing_requests, level.requests);
    if (level.differing_requests > 0) out << " (" << level.near_tie_requests << " near-ties)";
    out << " | " << fixed(level.unique_completions_mean, 2) << ", " << level.unique_completions_max
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
  std::size_t shown = 0;
  for (const auto& entry : summary.divergences) {
    if (shown++ == at_most) {
      out << "- … and " << (summary.divergences.size() - at_most) << " more\n";
      break;
    }
    out << "- `" << entry.run << "` request " << entry.baseline_id << " (key "
        << entry.key.substr(0, 12) << "): " << describe_divergence(entry.divergence) << "\n";
  }
  return out.str();
}

std::string summary_to_markdown(const Summary& summary) {
  std::ostringstream out;
  out << "# retrace sweep\n\n"
      << "trace `" << summary.trace << "` → target `" << summary.target << "`; baseline: run `"
      << summary.baseline_run << "`.\n"
      << "N = requests per run. \"differ\" counts requests whose output differs from the baseline in "
         "any repeat; throughput is mean (min–max, spread = (max−min)/mean) across repeats; "
         "latency percentiles pool every repeat.\n\n";
  out << levels_table(summary);

  out << "\n## Runs\n\n| run | requests | errors | req/s | output tok/s | identical | divergent | "
         "near-ties | match expected |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const auto& run : summary.runs) {
    out << "| " << run.name << (run.baseline ? " (baseline)" : "") << " | " << run.exchanges
        << " | " << run.errors << " | " << fixed(run.requests_per_s, 2) << " | "
        << fixed(run.output_tokens_per_s, 1) << " | " << run.identical << " | " << run.divergent
        << " | " << run.near_ties << " | "
        << (run.matches_expected ? std::to_string(*run.matches_expected) : "—") << " |\n";
  }

  out << "\n## Divergences from the baseline (first divergent token)\n\n"
      << divergence_list(summary, summary.divergences.size());
  if (summary.errors > 0)
    out << "\n**" << summary.errors
        << " request(s) failed**; see the run traces (`retrace inspect RUN`). Results are incomplete.\n";
  return out.str();
}

}  // namespace retrace::sweep
