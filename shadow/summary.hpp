// The verdict in words and numbers: DIR/summary.json, DIR/summary.md, and the shadow_* families
// of the admin endpoint's /metrics. One snapshot (verdict.hpp) feeds all three, so they agree.
#pragma once

#include <cstdint>
#include <string>

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
// The final lines shadow prints: what was compared and what was dropped, and the gate's outcome.
std::string final_lines(const Verdict& verdict, const RunFacts& facts);

}  // namespace retrace::shadow
