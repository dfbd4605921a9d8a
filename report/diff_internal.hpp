// Helpers the diff renderers share (internal to report/).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "diff/diff.hpp"

namespace retrace::report {

// "baseline" for run 0, else the name of candidate run - 1.
std::string run_label(std::size_t run, const diff::Result& result);
std::string_view fail_on_name(diff::FailOn fail_on);

// Outputs of a run that differ from the baseline (divergent, failed or missing on either side),
// out of those compared: the count every renderer states with its bound.
struct DifferCount {
  std::size_t differ = 0, total = 0;
};
inline DifferCount differ_count(const diff::RunComparison& run) {
  // Not compared counts as differing: nothing says it is the same.
  return {run.divergent + run.errors + run.missing_in_candidate + run.missing_in_baseline + run.not_compared,
          run.aligned + run.missing_in_candidate + run.missing_in_baseline};
}

}  // namespace retrace::report
