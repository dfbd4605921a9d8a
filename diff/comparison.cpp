// The steps of one comparison (see comparison.hpp): place each candidate exchange, look closely at
// the pairs that differ, and sum up.
#include "diff/comparison.hpp"

#include <algorithm>

namespace retrace::diff {

namespace {

std::size_t estimated_bytes(const Exchange& exchange) {
  std::size_t bytes = sizeof(Exchange);
  for (const auto& choice : exchange.choices) {
    bytes += sizeof(Choice) + choice.finish_reason.size() + choice.tool_name.size() +
             choice.values.size() * sizeof(double);
    for (const auto& token : choice.tokens) bytes += sizeof(Token) + token.bytes.size();
    bytes += choice.alternatives.size() * (sizeof(Alternative) + 8);
  }
  return bytes;
}

// Only what the token-level comparison needs.
Exchange stripped(const Exchange& exchange) {
  Exchange kept;
  kept.id = exchange.id;
  kept.source_id = exchange.source_id;
  kept.key = exchange.key;
  kept.choices = exchange.choices;
  return kept;
}

// An aligned pair's identity: ids, positions, key and both sides' gold matches.
PairResult aligned_pair(Verdict verdict, const Summary& baseline, std::size_t baseline_position,
                        const Summary& candidate, std::size_t candidate_position) {
  PairResult pair;
  pair.verdict = verdict;
  pair.baseline_id = baseline.id;
  pair.candidate_id = candidate.id;
  pair.baseline_position = baseline_position;
  pair.candidate_position = candidate_position;
  pair.key = baseline.key;
  pair.baseline_matches_expected = baseline.matches_expected;
  pair.candidate_matches_expected = candidate.matches_expected;
  pair.candidate_in_flight = candidate.in_flight_at_send;
  pair.candidate_cached = candidate.cached_tokens;
  pair.candidate_preemptions = candidate.preemptions;
  return pair;
}

// The tally of a candidate sent with `in_flight` requests in flight; null when not known.
InFlightTally* in_flight_tally(RunComparison& run, std::int32_t in_flight) {
  if (in_flight < 0) return nullptr;
  auto at = std::min<std::size_t>(static_cast<std::size_t>(in_flight), kMaxInFlightTallied);
  if (run.by_in_flight.size() <= at) run.by_in_flight.resize(at + 1);
  return &run.by_in_flight[at];
}

// Counts a compared candidate (and, when `differing`, a differing one; -1 takes one back) in the
// server's tallies its trace says it belongs to.
void tally_server(RunComparison& run, std::int64_t cached, double preemptions, int compared, int differing) {
  auto add = [&](InFlightTally& tally) {
    tally.compared += compared;
    tally.differing += differing;
  };
  if (cached >= 0) add(cached > 0 ? run.by_server.cache_hit : run.by_server.cache_miss);
  if (preemptions >= 0) add(preemptions > 0 ? run.by_server.preempted : run.by_server.not_preempted);
}

}  // namespace

Comparison::Comparison(ExchangeSource& baseline_source, const std::vector<ExchangeSource*>& candidate_sources,
                       const Options& options_in)
    : baseline(baseline_source), candidates(candidate_sources), options(options_in), base_summarizer_(options_in) {
  runs.reserve(candidates.size());
  for (ExchangeSource* source : candidates) {
    runs.emplace_back(source->name(), options);
    if (options.expect) runs.back().run.with_expected = 0, runs.back().run.matches_expected = 0;
  }
  baseline.rewind();
}

bool Comparison::next_baseline(ExchangeOutputs& out) {
  if (baseline_done_) return false;
  if (!baseline.next_outputs(out)) {
    baseline_done_ = true;
    baseline_note_ = baseline.recovery_note();
    return false;
  }
  base.emplace_back();
  base_summarizer_.summarize(out, nullptr, base.back());
  return true;
}

void Comparison::finish_baseline() {
  ExchangeOutputs exchange;
  while (next_baseline(exchange)) {
  }
}

void Comparison::grow(RunState& state) const {
  state.run.matrix.resize(base.size(), 'M');
  state.taken.resize(base.size(), false);
  state.completions.resize(base.size(), 0);
}

void Comparison::summarize(std::size_t r, const ExchangeOutputs& exchange) {
  RunState& state = runs[r];
  if (!state.started) {
    state.started = true;
    state.run.alignment = choose_alignment(!base.empty() && base.front().source_id.has_value(),
                                           exchange.source_id.has_value());
  }
  // Alignment by key+occurrence needs the occurrence, which summarize() computes; by ids it does
  // not. Summarize without the fallback answer; place() fills it in from the partner.
  state.summarizer.summarize(exchange, nullptr, state.summary);
}

std::size_t Comparison::find(std::size_t r) {
  RunState& state = runs[r];
  grow(state);
  auto key = candidate_key(state.summary, state.run.alignment);
  if (!key) return kNone;
  const auto& map = index_.map(state.run.alignment, base);
  auto it = map.find(*key);
  return it != map.end() && !state.taken[it->second] ? it->second : kNone;
}

std::optional<std::size_t> Comparison::place(std::size_t r, const ExchangeOutputs& exchange, std::size_t j) {
  RunState& state = runs[r];
  RunComparison& run = state.run;
  Summary& summary = state.summary;
  const std::size_t position = state.position++;
  grow(state);
  if (run.alignment != Alignment::key_occurrence) check_key(state, j);
  // The candidate's own expected answer wins; else the aligned baseline's (imported dataset).
  if (options.expect && j != kNone && !summary.expected && base[j].expected) {
    summary.expected = base[j].expected;
    summary.matches_expected =
        !summary.failed && matches_expected(output_text(exchange), *summary.expected, options);
  }
  if (summary.matches_expected) {
    ++*run.with_expected;
    if (*summary.matches_expected) ++*run.matches_expected;
    else run.failing_expected.push_back(j != kNone ? base[j].id : summary.id);
  }

  if (j == kNone) {
    PairResult pair;
    pair.verdict = Verdict::missing;
    pair.candidate_id = summary.id;
    pair.candidate_position = position;
    pair.key = summary.key;
    pair.candidate_matches_expected = summary.matches_expected;
    run.pairs.push_back(std::move(pair));
    ++run.missing_in_baseline;
    return std::nullopt;
  }
  state.taken[j] = true;
  ++run.aligned;
  const Summary& b = base[j];
  if (b.failed || summary.failed) {
    PairResult pair = aligned_pair(Verdict::error, b, j, summary, position);
    if (b.failed) pair.error = "baseline: " + b.error;
    if (summary.failed) pair.error += (pair.error.empty() ? "" : "; ") + std::string("candidate: ") + summary.error;
    run.pairs.push_back(std::move(pair));
    run.matrix[j] = 'E';
    ++run.errors;
    return std::nullopt;
  }
  if (!b.not_compared.empty() || !summary.not_compared.empty()) {
    PairResult pair = aligned_pair(Verdict::not_compared, b, j, summary, position);
    if (!b.not_compared.empty()) pair.error = "baseline: " + b.not_compared;
    if (!summary.not_compared.empty())
      pair.error += (pair.error.empty() ? "" : "; ") + std::string("candidate: ") + summary.not_compared;
    ++run.not_compared_why[pair.error];
    run.pairs.push_back(std::move(pair));
    run.matrix[j] = 'N';
    ++run.not_compared;
    return std::nullopt;
  }
  state.completions[j] = summary.completion_hash;
  auto* tally = in_flight_tally(run, summary.in_flight_at_send);
  if (tally) ++tally->compared;
  const bool same = same_output(b, summary);
  tally_server(run, summary.cached_tokens, summary.preemptions, 1, same ? 0 : 1);
  if (same) {
    run.matrix[j] = '.';
    ++run.identical;
    if (options.keep_identical) run.pairs.push_back(aligned_pair(Verdict::identical, b, j, summary, position));
    return std::nullopt;
  }
  run.matrix[j] = 'D';
  ++run.divergent;
  if (tally) ++tally->differing;
  run.pairs.push_back(aligned_pair(Verdict::divergent, b, j, summary, position));
  return run.pairs.size() - 1;
}

void Comparison::look_closely(std::size_t r, std::size_t pair_index, const Exchange& baseline_exchange,
                              const Exchange& candidate) {
  RunComparison& run = runs[r].run;
  PairResult& pair = run.pairs[pair_index];
  pair.divergences = compare_parts(baseline_exchange.choices, candidate.choices, options);
  if (!pair.divergences.empty()) return;
  // Hashes differed but the streams compare equal: ids on one side only, same text.
  pair.verdict = Verdict::identical;
  run.matrix[*pair.baseline_position] = '.';
  --run.divergent;
  if (auto* tally = in_flight_tally(run, pair.candidate_in_flight)) --tally->differing;
  tally_server(run, pair.candidate_cached, pair.candidate_preemptions, 0, -1);
  ++run.identical;
}

void Comparison::keep_for_later(std::size_t r, std::size_t pair_index, const Exchange& candidate) {
  const PairResult& pair = runs[r].run.pairs[pair_index];
  Pending entry{r, *pair.baseline_position, *pair.candidate_position, pair_index, std::nullopt, false};
  std::size_t size = estimated_bytes(candidate);
  if (kept_bytes_ + size <= options.memory_budget) {
    entry.candidate = stripped(candidate);
    kept_bytes_ += size;
  }
  pending_.push_back(std::move(entry));
}

void Comparison::place_rest(std::size_t r, const ExchangeOutputs* in_hand) {
  Exchange whole;
  auto place_one = [&](const ExchangeOutputs& exchange) {
    if (auto pair = place(r, exchange, find(r))) {
      candidates[r]->whole(whole);
      keep_for_later(r, *pair, whole);
    }
  };
  if (in_hand) place_one(*in_hand);
  ExchangeOutputs exchange;
  while (candidates[r]->next_outputs(exchange)) {
    summarize(r, exchange);
    place_one(exchange);
  }
  finish_run(r);
}

void Comparison::check_key(RunState& state, std::size_t j) {
  const Summary& summary = state.summary;
  if (j != kNone && base[j].key == summary.key) {
    ++state.same_key_pairs;
    // Every earlier exchange was paired with its own request too, so the baseline holds as many
    // copies of this key as the candidate has sent so far: key alignment pairs it as well.
    if (state.key_mismatches == 0) {
      ++state.pairable_by_key;
      return;
    }
  } else {
    ++state.key_mismatches;
  }
  const std::uint64_t hash = key_occurrence_hash(summary);
  if (baseline_done_) state.pairable_by_key += baseline_has(hash);
  else state.unresolved.push_back(hash);
}

bool Comparison::baseline_has(std::uint64_t key_occurrence) {
  if (!baseline_keys_built_) {
    baseline_keys_.reserve(base.size());
    for (const Summary& summary : base) baseline_keys_.push_back(key_occurrence_hash(summary));
    std::sort(baseline_keys_.begin(), baseline_keys_.end());
    baseline_keys_built_ = true;
  }
  return std::binary_search(baseline_keys_.begin(), baseline_keys_.end(), key_occurrence);
}

bool Comparison::realign_if_keys_disagree(std::size_t r) {
  RunState& state = runs[r];
  RunComparison& run = state.run;
  if (run.alignment == Alignment::key_occurrence) {
    run.pairs_with_same_key = run.aligned;
    return false;
  }
  for (std::uint64_t hash : state.unresolved) state.pairable_by_key += baseline_has(hash);
  std::vector<std::uint64_t>().swap(state.unresolved);
  run.pairs_with_same_key = state.same_key_pairs;
  const std::string by_ids(to_string(run.alignment));
  // Of the exchanges the ids paired with another request (or with none), those whose own request
  // is elsewhere in the baseline say the ids are wrong; those whose request is nowhere in it say
  // the replay rewrote the bodies it sent, and key alignment could not pair them either.
  const std::size_t request_elsewhere = state.pairable_by_key - std::min(state.pairable_by_key, state.same_key_pairs);
  const std::size_t request_nowhere = state.position - state.pairable_by_key;
  if (request_elsewhere <= request_nowhere) {
    if (state.same_key_pairs < run.aligned)
      run.alignment_note = by_ids + " kept: " + std::to_string(run.aligned - state.same_key_pairs) + " of " +
                           std::to_string(run.aligned) + " pairs carry different request keys, and by request key " +
                           std::to_string(state.pairable_by_key) +
                           " would pair (the replay changed the bodies it sent: --model, --token-ids, streaming, --set)";
    return false;
  }
  // The ids name another trace's exchanges: place the run again, from its start, by request key.
  std::string note = "aligned by request key instead of " + by_ids + ": by ids " +
                     std::to_string(state.same_key_pairs) + " of " + std::to_string(state.position) +
                     " exchanges paired with the same request, by request key " +
                     std::to_string(state.pairable_by_key) +
                     " (the ids are not the ones the other trace's source ids name, as in a recording of a "
                     "replay, or a replay of a replay)";
  std::erase_if(pending_, [&](const Pending& pending) {
    if (pending.run != r) return false;
    if (pending.candidate) kept_bytes_ -= estimated_bytes(*pending.candidate);
    return true;
  });
  std::string name = std::move(run.name);
  run = RunComparison{};
  run.name = std::move(name);
  if (options.expect) run.with_expected = 0, run.matches_expected = 0;
  run.alignment = Alignment::key_occurrence;
  run.alignment_note = std::move(note);
  state.summarizer.restart();
  state.position = 0;
  state.taken.clear();
  state.completions.clear();
  state.recovery_note.clear();
  state.same_key_pairs = state.key_mismatches = state.pairable_by_key = 0;
  candidates[r]->rewind();
  place_rest(r, nullptr);
  return true;
}

void Comparison::finish_run(std::size_t r) {
  if (realign_if_keys_disagree(r)) return;  // placed again, and finished, by request key
  RunState& state = runs[r];
  RunComparison& run = state.run;
  grow(state);
  run.exchanges = state.position;
  state.recovery_note = candidates[r]->recovery_note();
  for (std::size_t j = 0; j < base.size(); ++j) {
    if (state.taken[j]) continue;
    PairResult pair;
    pair.verdict = Verdict::missing;
    pair.baseline_id = base[j].id;
    pair.baseline_position = j;
    pair.key = base[j].key;
    pair.baseline_matches_expected = base[j].matches_expected;
    run.pairs.push_back(std::move(pair));
    ++run.missing_in_candidate;
  }
}

void Comparison::close_look_pass() {
  std::sort(pending_.begin(), pending_.end(), [](const Pending& x, const Pending& y) {
    return x.baseline_position < y.baseline_position;
  });
  std::size_t unresolved = pending_.size();
  while (unresolved > 0) {
    bool any_kept = std::any_of(pending_.begin(), pending_.end(),
                                [](const Pending& p) { return !p.resolved && p.candidate; });
    if (!any_kept) {
      // Over budget when first read: read the candidates again, one batch at a time.
      kept_bytes_ = 0;
      for (std::size_t r = 0; r < candidates.size() && kept_bytes_ <= options.memory_budget; ++r) {
        std::unordered_map<std::size_t, Pending*> wanted;
        for (auto& p : pending_)
          if (!p.resolved && p.run == r) wanted.emplace(p.candidate_position, &p);
        if (wanted.empty()) continue;
        ExchangeOutputs outputs;
        Exchange exchange;
        candidates[r]->rewind();
        for (std::size_t position = 0; candidates[r]->next_outputs(outputs); ++position) {
          auto it = wanted.find(position);
          if (it == wanted.end()) continue;
          candidates[r]->whole(exchange);
          std::size_t size = estimated_bytes(exchange);
          if (any_kept && kept_bytes_ + size > options.memory_budget) break;
          it->second->candidate = stripped(exchange);
          kept_bytes_ += size;
          any_kept = true;
        }
      }
      if (!any_kept) throw TraceError("diff: a candidate trace changed while it was being compared");
    }
    ExchangeOutputs outputs;
    Exchange exchange;
    baseline.rewind();
    std::size_t cursor = 0;
    for (std::size_t position = 0; cursor < pending_.size() && baseline.next_outputs(outputs); ++position) {
      while (cursor < pending_.size() && pending_[cursor].baseline_position < position) ++cursor;
      bool read_whole = false;
      for (std::size_t k = cursor; k < pending_.size() && pending_[k].baseline_position == position; ++k) {
        Pending& p = pending_[k];
        if (p.resolved || !p.candidate) continue;
        if (!read_whole) baseline.whole(exchange), read_whole = true;
        look_closely(p.run, p.pair_index, exchange, *p.candidate);
        p.candidate.reset();
        p.resolved = true;
        --unresolved;
      }
    }
    if (std::any_of(pending_.begin(), pending_.end(), [](const Pending& p) { return !p.resolved && p.candidate; }))
      throw TraceError("diff: the baseline trace " + baseline.name() + " changed while it was being compared");
  }
  pending_.clear();
}

Result Comparison::result() && {
  Result result;
  result.baseline_name = baseline.name();
  result.baseline_exchanges = base.size();
  if (!baseline_note_.empty()) result.warnings.push_back(baseline.name() + ": " + baseline_note_);
  for (std::size_t r = 0; r < runs.size(); ++r)
    if (!runs[r].recovery_note.empty())
      result.warnings.push_back(candidates[r]->name() + ": " + runs[r].recovery_note);
  if (options.expect) {
    std::size_t with = 0, matching = 0;
    for (const auto& summary : base) {
      if (!summary.matches_expected) continue;
      ++with;
      if (*summary.matches_expected) ++matching;
      else result.baseline_failing_expected.push_back(summary.id);
    }
    result.baseline_with_expected = with;
    result.baseline_matches_expected = matching;
  }

  for (auto& state : runs) {
    RunComparison& run = state.run;
    if (!options.keep_identical)
      std::erase_if(run.pairs, [](const PairResult& pair) { return pair.verdict == Verdict::identical; });
    for (const auto& pair : run.pairs) {
      if (pair.verdict != Verdict::divergent || pair.divergences.empty()) continue;
      const Divergence& first = pair.divergences.front();
      result.first_divergence_positions.push_back(first.baseline_index);
      // A pair is a near-tie only when every differing choice is one.
      Classification worst = Classification::near_tie;
      for (const auto& divergence : pair.divergences) {
        if (divergence.classification == Classification::real_change) worst = Classification::real_change;
        else if (divergence.classification == Classification::unknown && worst == Classification::near_tie)
          worst = Classification::unknown;
      }
      switch (worst) {
        case Classification::near_tie: ++run.near_ties; break;
        case Classification::real_change: ++run.real_changes; break;
        case Classification::unknown: ++run.unknown_changes; break;
      }
      for (const auto& divergence : pair.divergences)
        if (!divergence.basis_note.empty()) result.compared_bytes_somewhere = true;
    }
  }

  // N-way: distinct completions per baseline request.
  for (std::size_t j = 0; j < base.size(); ++j) {
    std::vector<std::pair<std::uint64_t, std::vector<std::size_t>>> groups;
    auto add = [&](std::uint64_t hash, std::size_t run) {
      for (auto& [group_hash, members] : groups)
        if (group_hash == hash) return members.push_back(run);
      groups.push_back({hash, {run}});
    };
    if (!base[j].failed) add(base[j].completion_hash, 0);
    for (std::size_t r = 0; r < runs.size(); ++r) {
      char status = runs[r].run.matrix[j];
      if (status == '.' || status == 'D') add(runs[r].completions[j], r + 1);
    }
    ++result.unique_completions_histogram[groups.size()];
    if (groups.size() > 1) {
      RequestGroups request;
      request.baseline_position = j;
      request.baseline_id = base[j].id;
      for (auto& [hash, members] : groups) request.groups.push_back(std::move(members));
      result.requests.push_back(std::move(request));
    }
  }
  for (auto& state : runs) result.runs.push_back(std::move(state.run));
  return result;
}

}  // namespace retrace::diff
