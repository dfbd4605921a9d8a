// Outputs of a run that differ from the baseline (divergent, failed or missing on either side),
// out of those compared: the count every renderer of a diff states with its Clopper–Pearson
// bound (`diff`'s text, --json's "differ" and "differ_rate_upper95", --csv) and the Python
// module's summary dict. One rule, below report/ so that python/ reads it too.
#pragma once

#include <cstddef>

#include "diff/diff.hpp"

namespace retrace::diff {

struct DifferCount {
  std::size_t differ = 0, total = 0;
};
inline DifferCount differ_count(const RunComparison& run) {
  // Not compared counts as differing: nothing says it is the same.
  return {run.divergent + run.errors + run.missing_in_candidate + run.missing_in_baseline + run.not_compared,
          run.aligned + run.missing_in_candidate + run.missing_in_baseline};
}

}  // namespace retrace::diff
