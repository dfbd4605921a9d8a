// A study of several targets (`retrace study --target A --target B ...`, e.g. one model with and
// without a batch-invariant mode): the same requests and the same matrix against each target, each
// with its own baseline and control (its own StudySummary), and the price of repeatability read
// across them: each target's throughput per cell beside how often its outputs differ from its own
// baseline, and how many of each target's baseline outputs differ from the first target's.
//
// Counting rule: as study_summary.hpp, per target; across targets, target k's baseline run is
// diffed against target 1's (same requests, paired by request), compared = answered on both
// sides, differing = divergent, with the Clopper–Pearson 95 % bound.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "report/html.hpp"
#include "report/study_summary.hpp"

namespace retrace::report {

// One target's baseline outputs against the first target's.
struct StudyAcross {
  std::size_t compared = 0, differing = 0;
  std::size_t near_ties = 0, real_changes = 0, unclassified = 0;
  std::map<std::string, std::size_t> first_parts;  // as StudyCell::first_parts
};

struct StudyTargets {
  std::vector<StudySummary> targets;  // in --target order
  std::vector<std::string> dirs;      // each target's sub-directory of the study ("target-1", ...)
  std::vector<StudyAcross> across;    // across[k]: target k's baseline against target 0's; across[0] unused
  std::size_t errors() const;
  bool any_differs() const;  // any cell of any target, or any baseline across targets
};

// "target 2 (retrace-serve 0.9 at http://127.0.0.1:8001)", from the preflight's identification.
std::string target_label(const StudyTargets& study, std::size_t index);
// The scope paragraph of a several-target study: each target named as identified, what the study
// is evidence of and what not, each target's bound and the across-target one; all from the data.
std::string study_targets_scope(const StudyTargets& study);
// The price-of-repeatability table (Markdown): a row per target and cell.
std::string price_table(const StudyTargets& study);
// Across targets (Markdown): a row per target after the first.
std::string across_table(const StudyTargets& study);

std::string study_targets_to_json(const StudyTargets& study);
std::string study_targets_to_markdown(const StudyTargets& study);
std::string study_targets_to_csv(const StudyTargets& study);  // one row per target and cell
HtmlReport study_targets_report(const StudyTargets& study);

// The part that diverged first, per cell, as an HTML table (a one-target study's report has it too).
HtmlTable study_parts_table(const StudySummary& summary);

}  // namespace retrace::report
