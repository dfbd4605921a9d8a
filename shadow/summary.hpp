// The verdict in words and numbers: DIR/summary.json, DIR/summary.md, DIR/report.html
// (summary_html.cpp) and the shadow_* families of the admin endpoint's /metrics. One snapshot
// (verdict.hpp) feeds all four, so they agree.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "shadow/verdict.hpp"

namespace retrace::shadow {

// What the run did beyond the verdict: for the summary's header and the gate.
struct RunFacts {
  std::string primary;              // the primary's URL
  std::uint64_t forwarded = 0;      // client requests relayed to the primary
  std::uint64_t sampled_out = 0;    // forwarded, not mirrored (--sample)
  double elapsed_seconds = 0;
  std::string state = "running";    // "running", then why it stopped
  std::optional<double> fail_if_excess;  // --fail-if-excess
};

// Whether --fail-if-excess fails the run: the excess interval's lower bound above it.
bool gate_fails(const Verdict& verdict, const RunFacts& facts);

std::string summary_json(const Verdict& verdict, const RunFacts& facts);
std::string summary_markdown(const Verdict& verdict, const RunFacts& facts);
std::string metrics_text(const Verdict& verdict);
// The self-contained HTML page (report/html.hpp's machinery): the verdict table, the excess and
// gate in words, each leg's first-divergence histogram and the difference rates with their bounds.
std::string summary_html(const Verdict& verdict, const RunFacts& facts);
// The final lines shadow prints: what was compared and what was dropped, and the gate's outcome.
std::string final_lines(const Verdict& verdict, const RunFacts& facts);

// Shared by the summaries (internal to shadow/): a leg's name (control 0, candidate 1), the
// verdict table's columns and one enabled leg's cells, the excess and the gate in a sentence
// ("" without --fail-if-excess).
std::string_view leg_name(std::size_t leg);
const std::vector<std::string>& verdict_columns();
std::vector<std::string> verdict_cells(const Verdict& verdict, std::size_t leg);
std::string excess_text(const Verdict& verdict);
std::string gate_text(const Verdict& verdict, const RunFacts& facts);

}  // namespace retrace::shadow
