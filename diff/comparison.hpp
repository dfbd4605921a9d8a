// Internal to diff/: the state of one compare() call and its steps, shared by the two ways the
// engine reads its inputs: one after another (engine.cpp: the baseline, then each candidate, then
// the divergent pairs' close look in one more baseline pass) and side by side (lockstep.cpp: one
// candidate in the baseline's order, compared as both are read).
//
// A candidate exchange goes through summarize() (its occurrence numbers and hashes), find() (its
// baseline partner, or none) and place() (its verdict: counts, matrix, pair), all from its
// outputs (ExchangeOutputs; the sources read nothing else). A pair whose hashes differ gets its
// close look (token by token, on the whole exchanges, read then from the sources' whole()) either
// at once, when both are in hand (look_closely()), or later, in the baseline pass
// (keep_for_later(), then close_look_pass()). Every candidate exchange is placed exactly once,
// and every divergent pair looked at once.
//
// An alignment by ids is checked against the request keys (diff.hpp): each placed pair counts
// whether it carries the same request, and each candidate exchange whether the baseline holds its
// (key, occurrence). When the run ends (finish_run()) and more of the exchanges the ids paired
// with another request (or with none) have their own request elsewhere in the baseline than
// nowhere in it, the ids were not the ones the other trace's source ids name: the run is placed
// again, from its start, by request key (realign_if_keys_disagree()). Nothing is counted twice:
// the first placing's pairs, verdicts and pending close looks are dropped.
#pragma once

#include <vector>

#include "diff/summary.hpp"

namespace retrace::diff {

struct RunState {
  RunState(std::string name, const Options& options) : summarizer(options) { run.name = std::move(name); }

  RunComparison run;
  Summarizer summarizer;
  Summary summary;                         // of the exchange being placed
  bool started = false;                    // alignment chosen (at the first exchange)
  std::size_t position = 0;                // candidate exchanges placed so far
  std::vector<bool> taken;                 // per baseline position
  std::vector<std::uint64_t> completions;  // per baseline position, valid where matrix is '.'/'D'
  std::string recovery_note;
  // The check of an alignment by ids (see above).
  std::size_t same_key_pairs = 0;     // pairs whose two exchanges carry the same request key
  std::size_t key_mismatches = 0;     // exchanges paired with another request, or not paired
  std::size_t pairable_by_key = 0;    // exchanges whose (key, occurrence) the baseline holds
  std::vector<std::uint64_t> unresolved;  // key_occurrence_hash of exchanges placed before the
                                          // baseline was read, looked up at finish_run()
};

class Comparison {
 public:
  Comparison(ExchangeSource& baseline, const std::vector<ExchangeSource*>& candidates, const Options& options);

  // Reads the next baseline exchange's outputs into `out` and appends its summary; false at the
  // end (then the baseline's recovery note is kept).
  bool next_baseline(ExchangeOutputs& out);
  // The rest of the baseline, summarized.
  void finish_baseline();

  // Summarizes candidate r's next exchange into runs[r].summary (choosing the run's alignment at
  // its first exchange), then finds its baseline partner: a position, or kNone.
  void summarize(std::size_t r, const ExchangeOutputs& exchange);
  std::size_t find(std::size_t r);
  // Records the verdict of candidate r's summarized exchange paired with baseline position j (or
  // kNone). Returns the pair's index in run.pairs when the hashes differ (a close look is due).
  std::optional<std::size_t> place(std::size_t r, const ExchangeOutputs& exchange, std::size_t j);
  // The close look at a divergent pair, both exchanges in hand.
  void look_closely(std::size_t r, std::size_t pair_index, const Exchange& baseline, const Exchange& candidate);
  // Keeps the candidate exchange (stripped, within Options::memory_budget) for close_look_pass().
  void keep_for_later(std::size_t r, std::size_t pair_index, const Exchange& candidate);
  // Places the rest of candidate r, which the caller rewound or read up to here; `in_hand`, when
  // given, is its next exchange's outputs (the source's last read), already summarized. Then
  // finish_run(r). The baseline is read.
  void place_rest(std::size_t r, const ExchangeOutputs* in_hand);
  // Candidate r after its last exchange: counts, recovery note, baseline exchanges it lacks.
  void finish_run(std::size_t r);

  // The close look at every pair kept for later: one more pass over the baseline (and over the
  // candidates, in batches, when their divergent exchanges did not fit the memory budget).
  void close_look_pass();
  // Counts, classes and N-way groups; the result.
  Result result() &&;

  ExchangeSource& baseline;
  const std::vector<ExchangeSource*>& candidates;
  const Options& options;
  std::vector<Summary> base;
  std::vector<RunState> runs;

 private:
  struct Pending {
    std::size_t run = 0;
    std::size_t baseline_position = 0;
    std::size_t candidate_position = 0;
    std::size_t pair_index = 0;  // in runs[run].run.pairs
    std::optional<Exchange> candidate;
    bool resolved = false;
  };
  void grow(RunState& state) const;
  // The alignment check's count for the exchange just paired with baseline position j (or kNone).
  void check_key(RunState& state, std::size_t j);
  // Whether the baseline holds the hash's (key, occurrence); the baseline is read.
  bool baseline_has(std::uint64_t key_occurrence);
  // At the end of a run aligned by ids: true (and the run placed again by request key and
  // finished) when key alignment pairs more exchanges with their own request; else the note.
  bool realign_if_keys_disagree(std::size_t r);

  Summarizer base_summarizer_;
  BaselineIndex index_;
  std::string baseline_note_;
  bool baseline_done_ = false;
  std::vector<Pending> pending_;
  std::size_t kept_bytes_ = 0;
  std::vector<std::uint64_t> baseline_keys_;  // sorted key_occurrence_hash of base, built on first use
  bool baseline_keys_built_ = false;
};

// Candidate 0 (the only one) in lockstep with the baseline while in order, then the rest as
// place_rest() does: on return the baseline is read and the run finished (lockstep.cpp).
void compare_in_lockstep(Comparison& comparison);

}  // namespace retrace::diff
