// The online verdict of `retrace shadow`: each mirrored exchange paired with its primary exchange
// (by the tag the proxy gave it), compared as `retrace diff` compares them (diff::compare_parts:
// part by part, first divergent token, near-tie vs real change by the logprob margin), and the
// figures kept per mirror leg. Exchanges arrive on the legs' trace threads in any order; a pair is
// compared when its second half arrives, and forgotten once every leg has given its half (or was
// dropped). At most kMaxPending pairs wait for their other half; past that the oldest are given up
// and counted as unpaired.
//
// The candidate's excess over the control: the candidate's difference rate (pairs whose outputs
// differ from the primary's, of pairs compared) minus the control's, with Newcombe's 95 % interval
// for a difference of two proportions (metrics/statistics.hpp). Without a control, the excess is
// the candidate's own difference rate and its interval Wilson's.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "diff/diff.hpp"
#include "format/trace.hpp"
#include "metrics/statistics.hpp"
#include "shadow/mirror.hpp"

namespace retrace::shadow {

inline constexpr std::size_t kMaxPending = 1u << 16;
inline constexpr std::size_t kMaxDeltaSamples = 1u << 20;

// One mirror leg's figures (control or candidate), against the primary.
struct LegFigures {
  bool enabled = false;
  std::string url;
  std::uint64_t written = 0;      // mirror exchanges in the leg's trace
  std::uint64_t pairs = 0;        // compared with their primary exchange
  std::uint64_t identical = 0, differing = 0;
  std::uint64_t near_ties = 0, real_changes = 0, unknown_changes = 0;  // of differing
  std::uint64_t not_compared = 0;  // both answered, no output to compare
  std::uint64_t errors = 0;        // the mirror's exchange failed where the primary's did not
  std::uint64_t primary_errors = 0;  // the primary's failed: not compared
  std::uint64_t dropped = 0;       // never sent: the sum of the two below
  std::uint64_t dropped_queue_full = 0;  // the queue was full (--mirror-queue): the mirror fell behind
  std::uint64_t dropped_at_stop = 0;     // shadow was stopping: refused, or still queued at --drain-timeout
  std::uint64_t unpaired = 0;      // given up waiting for the other half
  std::map<std::size_t, std::uint64_t> first_divergence;  // bucket (0, 1, 2-3, 4-7, ...) -> pairs
  std::vector<double> ttft_delta_ms, itl_delta_ms;  // mirror minus primary, per pair
};

struct Percentiles {
  std::size_t count = 0;
  double p50 = 0, p99 = 0;
};
Percentiles percentiles_of(std::vector<double> samples);

struct Verdict {
  std::array<LegFigures, 2> legs;  // [0] control, [1] candidate
  std::uint64_t primary_written = 0;
  std::optional<metrics::Interval> control_rate, candidate_rate;  // Wilson
  std::optional<metrics::Interval> excess;  // candidate minus control (Newcombe), or candidate's rate
  bool excess_against_control = false;
  std::array<Percentiles, 2> ttft_delta, itl_delta;  // per leg
};

class Pairing {
 public:
  Pairing(bool with_control, diff::Options options);
  // The leg traces' trace threads, each exchange written.
  void on_primary(std::uint64_t tag, const Exchange& exchange);
  void on_mirror(Leg leg, std::uint64_t tag, const Exchange& exchange);
  // A mirror dropped this tag (why: counted apart): its half will never come.
  void on_dropped(Leg leg, std::uint64_t tag, DropReason why);
  void set_url(Leg leg, std::string url);
  std::uint64_t candidate_pairs() const;
  Verdict snapshot() const;

 private:
  struct Half {
    Error error;
    std::string method;
    std::vector<Choice> choices;
    std::int64_t ttft_ns = -1;  // first token's arrival, else first byte's, from the send
    double itl_ms = -1;         // mean gap between tokens; -1 under two tokens
  };
  struct Slot {
    std::optional<Half> primary;
    std::array<std::optional<Half>, 2> mirrors;
    std::array<bool, 2> done{};  // the half arrived (and was compared) or was dropped
  };
  static Half half_of(const Exchange& exchange);
  void compare(std::size_t leg, const Half& primary, const Half& mirror);
  void settle(std::map<std::uint64_t, Slot>::iterator slot);
  void bound();

  bool with_control_;
  diff::Options options_;
  mutable std::mutex mutex_;
  std::map<std::uint64_t, Slot> pending_;  // guarded; by tag, oldest first
  std::array<LegFigures, 2> legs_;         // guarded
  std::uint64_t primary_written_ = 0;      // guarded
};

std::size_t leg_index(Leg leg);  // control 0, candidate 1

}  // namespace retrace::shadow
