// The diff engine: stream, summarise, align, then look closely only at the pairs that differ.
//
// One candidate whose exchanges come in the baseline's order (a replay in its input's order, two
// recordings of one client) is compared in lockstep (lockstep.cpp): both traces are read once,
// side by side, and each pair is compared as it arrives. Otherwise, and from the moment that
// order breaks, in passes:
// Either way the summaries are built from each exchange's outputs alone (ExchangeOutputs), and a
// pair's exchanges are read whole (ExchangeSource::whole()) only for their close look.
// Pass 1 reads the baseline once, keeping a small summary per exchange (ids, alignment keys,
// per-choice xxh3 of the ids and of the bytes, error, expected answer). Each candidate is then
// read once; every exchange is aligned to its baseline summary as it arrives and its hashes
// decide identity at once. Only the candidate exchanges whose hashes differ are kept (stripped
// of request and response), and one more pass over the baseline pairs them with their baseline
// exchange for the token-level comparison. Memory: summaries plus the divergent exchanges, capped
// by Options::memory_budget (beyond it, the candidate is re-read in batches).
#include "diff/comparison.hpp"

namespace retrace::diff {

bool ExchangeSource::next_outputs(ExchangeOutputs& out) {
  if (!next(read_)) return false;
  outputs_of(read_, out);
  return true;
}

void ExchangeSource::whole(Exchange& out) { out = read_; }

bool MemorySource::next(Exchange& out) {
  if (position_ >= exchanges_->size()) return false;
  out = (*exchanges_)[position_++];
  return true;
}

Result compare(ExchangeSource& baseline, const std::vector<ExchangeSource*>& candidates,
               const Options& options) {
  Comparison comparison(baseline, candidates, options);
  if (options.lockstep && candidates.size() == 1) {
    compare_in_lockstep(comparison);
  } else {
    comparison.finish_baseline();
    for (std::size_t r = 0; r < candidates.size(); ++r) {
      candidates[r]->rewind();
      comparison.place_rest(r, nullptr);
    }
  }
  comparison.close_look_pass();
  return std::move(comparison).result();
}

Result compare(const LoadedTrace& baseline, const std::vector<const LoadedTrace*>& candidates,
               const std::vector<std::string>& candidate_names, const Options& options) {
  MemorySource baseline_source("baseline", baseline.exchanges);
  std::vector<MemorySource> sources;
  sources.reserve(candidates.size());
  for (std::size_t i = 0; i < candidates.size(); ++i)
    sources.emplace_back(i < candidate_names.size() ? candidate_names[i] : "candidate " + std::to_string(i + 1),
                         candidates[i]->exchanges);
  std::vector<ExchangeSource*> pointers;
  for (auto& source : sources) pointers.push_back(&source);
  return compare(baseline_source, pointers, options);
}

std::string not_compared_text(const RunComparison& run) {
  if (run.not_compared == 0) return {};
  std::string text = std::to_string(run.not_compared) + " not compared (";
  bool first = true;
  for (const auto& [reason, count] : run.not_compared_why) {
    if (!first) text += "; ";
    first = false;
    text += reason + ": " + std::to_string(count);
  }
  return text + ")";
}

std::size_t failing_outputs(const Result& result, FailOn fail_on) {
  if (fail_on == FailOn::none) return 0;
  std::size_t failing = 0;
  for (const auto& run : result.runs) {
    failing += run.errors + run.missing_in_candidate + run.missing_in_baseline + run.not_compared;
    failing += fail_on == FailOn::any ? run.divergent : run.divergent - run.near_ties;
  }
  return failing;
}

}  // namespace retrace::diff
