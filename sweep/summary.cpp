// Sweep summary: per-level aggregation of diff results and run figures (rendered by report/).
// Pure functions over plain structs, so the arithmetic is testable without any traffic.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include "sweep/sweep.hpp"

namespace retrace::sweep {

LevelSummary summarize_level(double level_value, const diff::Result& level_diff,
                             const std::vector<RunFigures>& level_runs,
                             const replay::Stats& pooled) {
  LevelSummary level;
  level.level = level_value;
  level.runs = level_runs.size();
  level.requests = level_diff.baseline_exchanges;

  std::vector<double> request_rates, token_rates;
  std::vector<metrics::RunClient> clients;
  for (const auto& run : level_runs) {
    clients.push_back(run.client);
    request_rates.push_back(run.requests_per_s);
    token_rates.push_back(run.output_tokens_per_s);
    level.errors += run.errors;
    if (run.matches_expected) {
      level.matches_min = std::min(level.matches_min.value_or(*run.matches_expected),
                                   *run.matches_expected);
      level.matches_max = std::max(level.matches_max.value_or(0), *run.matches_expected);
    }
  }
  if (auto most = metrics::most_loaded(clients)) level.client = clients[*most];
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

std::vector<DivergenceEntry> collect_divergences(double level, const diff::Result& level_diff) {
  std::vector<DivergenceEntry> entries;
  for (const auto& run : level_diff.runs)
    for (const auto& pair : run.pairs) {
      if (pair.verdict != diff::Verdict::divergent) continue;
      for (const auto& divergence : pair.divergences)
        entries.push_back(
            {level, run.name, pair.baseline_id.value_or(0), pair.key.hex(), divergence});
    }
  return entries;
}

}  // namespace retrace::sweep
