// One candidate compared side by side with the baseline while its exchanges come in the
// baseline's order: no second baseline pass, no divergent exchange kept (see comparison.hpp).
//
// The i-th candidate exchange is compared in lockstep when the engine's alignment pairs it with
// the i-th baseline exchange, judged on the baseline read so far. That is the same partner the
// passes would give it: a key maps to its first occurrence in the baseline, and the first
// occurrence of the i-th baseline exchange's key, if at i, stays at i however much more is read.
// A repeated baseline key therefore breaks the order too. From the first exchange that is not in
// order (or one trace ending), the rest goes the passes' way: the baseline read to its end, then
// that exchange and the rest of the candidate placed against it, their divergent pairs looked at
// in the baseline pass. Nothing is placed or looked at twice.
#include "diff/comparison.hpp"

namespace retrace::diff {

void compare_in_lockstep(Comparison& comparison) {
  ExchangeSource& candidate = *comparison.candidates.front();
  RunState& state = comparison.runs.front();
  candidate.rewind();
  ExchangeOutputs baseline_outputs, candidate_outputs;
  Exchange baseline_exchange, candidate_exchange;  // read whole only for a close look
  for (std::size_t i = 0;; ++i) {
    bool have_baseline = comparison.next_baseline(baseline_outputs);
    if (!candidate.next_outputs(candidate_outputs)) {
      comparison.finish_baseline();
      comparison.finish_run(0);
      return;
    }
    comparison.summarize(0, candidate_outputs);
    if (!have_baseline || comparison.find(0) != i) break;
    if (auto pair = comparison.place(0, candidate_outputs, i)) {
      comparison.baseline.whole(baseline_exchange);
      candidate.whole(candidate_exchange);
      comparison.look_closely(0, *pair, baseline_exchange, candidate_exchange);
    }
    ++state.run.compared_in_lockstep;
  }
  comparison.finish_baseline();
  comparison.place_rest(0, &candidate_outputs);
}

}  // namespace retrace::diff
