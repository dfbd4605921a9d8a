// The diff engine: stream, summarise, align, then look closely only at the pairs that differ.
//
// Pass 1 reads the baseline once, keeping a small summary per exchange (ids, alignment keys,
// per-choice xxh3 of the ids and of the bytes, error, expected answer). Each candidate is then
// read once; every exchange is aligned to its baseline summary as it arrives and its hashes
// decide identity at once. Only the candidate exchanges whose hashes differ are kept (stripped
// of request and response), and one more pass over the baseline pairs them with their baseline
// exchange for the token-level comparison. Memory: summaries plus the divergent exchanges, capped
// by Options::memory_budget (beyond it, the candidate is re-read in batches).
#include <algorithm>
#include <unordered_map>

#include <xxhash.h>

#include "diff/diff.hpp"

namespace retrace::diff {

bool MemorySource::next(Exchange& out) {
  if (position_ >= exchanges_->size()) return false;
  out = (*exchanges_)[position_++];
  return true;
}

namespace {

constexpr std::size_t kNone = static_cast<std::size_t>(-1);

struct ChoiceDigest {
  std::uint64_t byte_hash = 0;
  std::uint64_t id_hash = 0;
  bool ids = false;
};

struct Summary {
  std::uint64_t id = 0;
  std::optional<std::uint64_t> source_id;
  RequestKey key;
  std::uint32_t occurrence = 0;
  // How many earlier exchanges of this trace re-issued the same source: a run that cycles a short
  // trace (replay --requests N) sends each source several times.
  std::uint32_t source_occurrence = 0;
  std::vector<ChoiceDigest> choices;
  std::uint64_t completion_hash = 0;  // all choices' bytes: what "same completion" means N-way
  bool failed = false;
  std::string error;  // "kind: message" when failed
  std::optional<std::string> expected;  // kept only with Options::expect
  std::optional<bool> matches_expected;
};

struct KeyHash {
  std::size_t operator()(const RequestKey& key) const { return key.hi ^ (key.lo * 0x9E3779B97F4A7C15ull); }
};

// Alignment key: an id (source or own), or request key plus occurrence number.
struct AlignKey {
  std::uint64_t a = 0, b = 0;
  std::uint32_t c = 0;
  bool operator==(const AlignKey&) const = default;
};
struct AlignKeyHash {
  std::size_t operator()(const AlignKey& key) const {
    return key.a * 0x9E3779B97F4A7C15ull ^ key.b ^ (std::uint64_t(key.c) << 32 | key.c);
  }
};

// Builds summaries; keeps its scratch buffers across exchanges.
class Summarizer {
 public:
  explicit Summarizer(const Options& options) : options_(options) {}

  void summarize(const Exchange& exchange, const std::string* fallback_expected, Summary& out) {
    out.id = exchange.id;
    out.source_id = exchange.source_id;
    out.key = exchange.key;
    out.occurrence = occurrences_[exchange.key]++;
    out.source_occurrence = exchange.source_id ? source_occurrences_[*exchange.source_id]++ : 0;
    out.failed = exchange.error.kind != ErrorKind::none;
    out.error.clear();
    if (out.failed) {
      out.error = std::string(to_string(exchange.error.kind));
      if (!exchange.error.message.empty()) out.error += ": " + exchange.error.message;
    }
    out.choices.resize(exchange.choices.size());
    XXH3_state_t* completion = state_.get();
    XXH3_64bits_reset(completion);
    for (std::size_t i = 0; i < exchange.choices.size(); ++i) {
      const Choice& choice = exchange.choices[i];
      ChoiceDigest& digest = out.choices[i];
      bytes_.clear();
      ids_.clear();
      for (const Token& token : choice.tokens) {
        bytes_ += token.bytes;
        ids_.push_back(token.id);
      }
      digest.ids = has_token_ids(choice);
      digest.byte_hash = XXH3_64bits(bytes_.data(), bytes_.size());
      digest.id_hash = digest.ids ? XXH3_64bits(ids_.data(), ids_.size() * sizeof(std::int32_t)) : 0;
      std::uint64_t framing[2] = {digest.byte_hash, bytes_.size()};
      XXH3_64bits_update(completion, framing, sizeof framing);
    }
    out.completion_hash = XXH3_64bits_digest(completion);
    out.expected.reset();
    out.matches_expected.reset();
    if (options_.expect) {
      if (exchange.expected) out.expected = exchange.expected;
      else if (fallback_expected) out.expected = *fallback_expected;
      if (out.expected && !out.failed)
        out.matches_expected = matches_expected(output_text(exchange), *out.expected, options_);
      else if (out.expected)
        out.matches_expected = false;
    }
  }

 private:
  struct StateDeleter {
    void operator()(XXH3_state_t* state) const { XXH3_freeState(state); }
  };
  const Options& options_;
  std::unordered_map<RequestKey, std::uint32_t, KeyHash> occurrences_;
  std::unordered_map<std::uint64_t, std::uint32_t> source_occurrences_;
  std::string bytes_;
  std::vector<std::int32_t> ids_;
  std::unique_ptr<XXH3_state_t, StateDeleter> state_{XXH3_createState()};
};

bool same_output(const Summary& baseline, const Summary& candidate) {
  if (baseline.choices.size() != candidate.choices.size()) return false;
  for (std::size_t i = 0; i < baseline.choices.size(); ++i) {
    const auto& a = baseline.choices[i];
    const auto& b = candidate.choices[i];
    bool equal = a.ids && b.ids ? a.id_hash == b.id_hash : a.byte_hash == b.byte_hash;
    if (!equal) return false;
  }
  return true;
}

AlignKey baseline_key(const Summary& summary, Alignment alignment) {
  switch (alignment) {
    case Alignment::source_to_source:
      return {summary.source_id.value_or(~0ull), 1, summary.source_occurrence};
    case Alignment::id_to_source:
      return {summary.source_id.value_or(~0ull), 1, 0};
    case Alignment::source_to_id:
      return {summary.id, 1, 0};
    case Alignment::key_occurrence:
      return {summary.key.hi, summary.key.lo, summary.occurrence};
  }
  return {};
}

std::optional<AlignKey> candidate_key(const Summary& summary, Alignment alignment) {
  switch (alignment) {
    case Alignment::source_to_source:
      if (!summary.source_id) return std::nullopt;
      return AlignKey{*summary.source_id, 1, summary.source_occurrence};
    case Alignment::source_to_id:
      if (!summary.source_id) return std::nullopt;
      return AlignKey{*summary.source_id, 1, 0};
    case Alignment::id_to_source:
      return AlignKey{summary.id, 1, 0};
    case Alignment::key_occurrence:
      return AlignKey{summary.key.hi, summary.key.lo, summary.occurrence};
  }
  return std::nullopt;
}

std::size_t estimated_bytes(const Exchange& exchange) {
  std::size_t bytes = sizeof(Exchange);
  for (const auto& choice : exchange.choices) {
    bytes += sizeof(Choice) + choice.finish_reason.size();
    for (const auto& token : choice.tokens)
      bytes += sizeof(Token) + token.bytes.size() + token.top.size() * (sizeof(Alternative) + 8);
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

struct Pending {
  std::size_t run = 0;
  std::size_t baseline_position = 0;
  std::size_t candidate_position = 0;
  std::size_t pair_index = 0;  // in runs[run].pairs
  std::optional<Exchange> candidate;
  bool resolved = false;
};

std::vector<Divergence> compare_choices(const Exchange& baseline, const Exchange& candidate,
                                        const Options& options) {
  std::vector<Divergence> divergences;
  std::size_t count = std::max(baseline.choices.size(), candidate.choices.size());
  for (std::size_t i = 0; i < count; ++i) {
    Choice empty_baseline, empty_candidate;
    const Choice& a = i < baseline.choices.size() ? baseline.choices[i] : empty_baseline;
    const Choice& b = i < candidate.choices.size() ? candidate.choices[i] : empty_candidate;
    auto divergence = first_divergence(a, b, options);
    if (!divergence) continue;
    divergence->choice = std::uint32_t(i < baseline.choices.size() ? a.index : b.index);
    if (i >= baseline.choices.size()) divergence->basis_note = "choice absent on the baseline";
    if (i >= candidate.choices.size()) divergence->basis_note = "choice absent on the candidate";
    divergences.push_back(std::move(*divergence));
  }
  return divergences;
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
  return pair;
}

}  // namespace

Result compare(ExchangeSource& baseline, const std::vector<ExchangeSource*>& candidates,
               const Options& options) {
  Result result;
  result.baseline_name = baseline.name();

  // Pass 1: the baseline.
  std::vector<Summary> base;
  {
    Summarizer summarizer(options);
    Exchange exchange;
    baseline.rewind();
    while (baseline.next(exchange)) {
      base.emplace_back();
      summarizer.summarize(exchange, nullptr, base.back());
    }
    if (auto note = baseline.recovery_note(); !note.empty())
      result.warnings.push_back(baseline.name() + ": " + note);
  }
  result.baseline_exchanges = base.size();
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
  const bool baseline_has_sources = !base.empty() && base.front().source_id.has_value();

  std::unordered_map<int, std::unordered_map<AlignKey, std::size_t, AlignKeyHash>> maps;
  auto baseline_map = [&](Alignment alignment) -> const auto& {
    auto [it, inserted] = maps.try_emplace(int(alignment));
    if (inserted) {
      it->second.reserve(base.size());
      for (std::size_t j = 0; j < base.size(); ++j)
        it->second.try_emplace(baseline_key(base[j], alignment), j);  // first occurrence wins
    }
    return it->second;
  };

  // Per run: the completion hash at each baseline position (valid where the matrix says '.'/'D').
  std::vector<std::vector<std::uint64_t>> completions(candidates.size());
  std::vector<Pending> pending;
  std::size_t kept_bytes = 0;

  for (std::size_t r = 0; r < candidates.size(); ++r) {
    ExchangeSource& source = *candidates[r];
    RunComparison run;
    run.name = source.name();
    run.matrix.assign(base.size(), 'M');
    completions[r].assign(base.size(), 0);
    std::vector<bool> taken(base.size(), false);
    if (options.expect) run.with_expected = 0, run.matches_expected = 0;

    Summarizer summarizer(options);
    Summary summary;
    Exchange exchange;
    const std::unordered_map<AlignKey, std::size_t, AlignKeyHash>* map = nullptr;
    std::size_t position = 0;
    source.rewind();
    for (; source.next(exchange); ++position) {
      if (!map) {
        bool candidate_has_sources = exchange.source_id.has_value();
        run.alignment = baseline_has_sources && candidate_has_sources ? Alignment::source_to_source
                        : candidate_has_sources                      ? Alignment::source_to_id
                        : baseline_has_sources                       ? Alignment::id_to_source
                                                                      : Alignment::key_occurrence;
        map = &baseline_map(run.alignment);
      }
      // The candidate's own expected answer wins; else the aligned baseline's (imported dataset).
      std::optional<AlignKey> key;
      std::size_t j = kNone;
      {
        // Alignment by key+occurrence needs the occurrence, which summarize() computes; by ids it
        // does not. Summarize first without the fallback answer, then fill it in.
        summarizer.summarize(exchange, nullptr, summary);
        key = candidate_key(summary, run.alignment);
        if (key)
          if (auto it = map->find(*key); it != map->end() && !taken[it->second]) j = it->second;
      }
      if (options.expect && j != kNone && !summary.expected && base[j].expected) {
        summary.expected = base[j].expected;
        summary.matches_expected =
            !summary.failed && matches_expected(output_text(exchange), *summary.expected, options);
      }
      if (summary.matches_expected) {
        ++*run.with_expected;
        if (*summary.matches_expected) ++*run.matches_expected;
        else run.failing_expected.push_back(summary.id);
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
        continue;
      }
      taken[j] = true;
      ++run.aligned;
      const Summary& b = base[j];
      if (b.failed || summary.failed) {
        PairResult pair = aligned_pair(Verdict::error, b, j, summary, position);
        if (b.failed) pair.error = "baseline: " + b.error;
        if (summary.failed) pair.error += (pair.error.empty() ? "" : "; ") + std::string("candidate: ") + summary.error;
        run.pairs.push_back(std::move(pair));
        run.matrix[j] = 'E';
        ++run.errors;
        continue;
      }
      completions[r][j] = summary.completion_hash;
      if (same_output(b, summary)) {
        run.matrix[j] = '.';
        ++run.identical;
        continue;
      }
      run.matrix[j] = 'D';
      ++run.divergent;
      PairResult pair = aligned_pair(Verdict::divergent, b, j, summary, position);
      Pending entry{r, j, position, run.pairs.size(), std::nullopt, false};
      std::size_t size = estimated_bytes(exchange);
      if (kept_bytes + size <= options.memory_budget) {
        entry.candidate = stripped(exchange);
        kept_bytes += size;
      }
      pending.push_back(std::move(entry));
      run.pairs.push_back(std::move(pair));
    }
    run.exchanges = position;
    if (auto note = source.recovery_note(); !note.empty())
      result.warnings.push_back(source.name() + ": " + note);
    for (std::size_t j = 0; j < base.size(); ++j) {
      if (taken[j]) continue;
      PairResult pair;
      pair.verdict = Verdict::missing;
      pair.baseline_id = base[j].id;
      pair.baseline_position = j;
      pair.key = base[j].key;
      pair.baseline_matches_expected = base[j].matches_expected;
      run.pairs.push_back(std::move(pair));
      ++run.missing_in_candidate;
    }
    result.runs.push_back(std::move(run));
  }

  // Pass 2: the token-level comparison of the pairs whose hashes differ.
  std::sort(pending.begin(), pending.end(), [](const Pending& x, const Pending& y) {
    return x.baseline_position < y.baseline_position;
  });
  std::size_t unresolved = pending.size();
  while (unresolved > 0) {
    bool any_kept = std::any_of(pending.begin(), pending.end(),
                                [](const Pending& p) { return !p.resolved && p.candidate; });
    if (!any_kept) {
      // Over budget in pass 1: read the candidates again, one batch at a time.
      kept_bytes = 0;
      for (std::size_t r = 0; r < candidates.size() && kept_bytes <= options.memory_budget; ++r) {
        std::unordered_map<std::size_t, Pending*> wanted;
        for (auto& p : pending)
          if (!p.resolved && p.run == r) wanted.emplace(p.candidate_position, &p);
        if (wanted.empty()) continue;
        Exchange exchange;
        candidates[r]->rewind();
        for (std::size_t position = 0; candidates[r]->next(exchange); ++position) {
          auto it = wanted.find(position);
          if (it == wanted.end()) continue;
          std::size_t size = estimated_bytes(exchange);
          if (any_kept && kept_bytes + size > options.memory_budget) break;
          it->second->candidate = stripped(exchange);
          kept_bytes += size;
          any_kept = true;
        }
      }
      if (!any_kept) throw TraceError("diff: a candidate trace changed while it was being compared");
    }
    Exchange exchange;
    baseline.rewind();
    std::size_t cursor = 0;
    for (std::size_t position = 0; cursor < pending.size() && baseline.next(exchange); ++position) {
      while (cursor < pending.size() && pending[cursor].baseline_position < position) ++cursor;
      for (std::size_t k = cursor; k < pending.size() && pending[k].baseline_position == position; ++k) {
        Pending& p = pending[k];
        if (p.resolved || !p.candidate) continue;
        RunComparison& run = result.runs[p.run];
        PairResult& pair = run.pairs[p.pair_index];
        pair.divergences = compare_choices(exchange, *p.candidate, options);
        p.candidate.reset();
        p.resolved = true;
        --unresolved;
        if (pair.divergences.empty()) {
          // Hashes differed but the streams compare equal: ids on one side only, same text.
          pair.verdict = Verdict::identical;
          run.matrix[position] = '.';
          --run.divergent;
          ++run.identical;
        }
      }
    }
    if (std::any_of(pending.begin(), pending.end(), [](const Pending& p) { return !p.resolved && p.candidate; }))
      throw TraceError("diff: the baseline trace " + baseline.name() + " changed while it was being compared");
  }

  for (auto& run : result.runs) {
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
    for (std::size_t r = 0; r < result.runs.size(); ++r) {
      char status = result.runs[r].matrix[j];
      if (status == '.' || status == 'D') add(completions[r][j], r + 1);
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
  return result;
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

std::size_t failing_outputs(const Result& result, FailOn fail_on) {
  if (fail_on == FailOn::none) return 0;
  std::size_t failing = 0;
  for (const auto& run : result.runs) {
    failing += run.errors + run.missing_in_candidate + run.missing_in_baseline;
    failing += fail_on == FailOn::any ? run.divergent : run.divergent - run.near_ties;
  }
  return failing;
}

}  // namespace retrace::diff
