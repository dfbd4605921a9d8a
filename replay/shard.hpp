// Sharded runs: N `retrace replay --shard I/N` processes, on one machine or many, that start their
// schedules at one wall-clock instant (--start-at) and are put back together by `retrace merge`
// (replay/merge.hpp).
//
// Decisions:
// - --start-at TIME is RFC 3339 with a zone ("2026-12-01T10:00:00Z", "...T11:00:00.5+01:00") or
//   epoch seconds with an optional fraction ("1764583200.25"). The run's schedule clock (offset 0 of
//   every intended send) is that instant; the process waits for it after loading the trace, the
//   preflight and any --warmup (Ctrl-C still stops it).
// - A TIME more than kStartAtTolerance in the past is an error (exit 2) before any traffic: a
//   scheduler that started a shard that late would have it race through its backlog. Within the
//   tolerance the shard starts at once and its clock still reads from TIME, so its open-loop sends
//   keep their global times; how late it began is recorded as its clock_offset_ns.
// - With --shard I/N an open-loop rate and --timing recorded keep the whole trace's schedule: the
//   arrival process is drawn for all N shards' chains and each shard sends its own at their global
//   offsets (--rate is the total rate). Closed-loop concurrency is per shard; merge says the total.
// - A sharded (or --start-at) run's settings carry what merge checks: "input_identity" (the
//   replayed trace's exchange count, creation time and a digest of every request key),
//   "selected" (how many exchanges this shard was to send), "host", "start_at" and, once the run
//   ended, "clock_offset_ns" (this host's wall clock when the schedule began minus start_at: how
//   late it began; hosts' clocks agree only as well as NTP keeps them).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/time.hpp"
#include "format/trace.hpp"
#include "metrics/run_settings.hpp"

namespace retrace::replay {

inline constexpr std::int64_t kStartAtToleranceNs = 1'000'000'000;

// --start-at TIME -> Unix nanoseconds. Throws std::invalid_argument naming what is wrong.
std::int64_t parse_start_at(std::string_view text);

// RFC 3339 is base/time.hpp's; replay:: callers keep the name.
using retrace::format_rfc3339;

// Throws std::invalid_argument when `start_at_ns` is more than kStartAtToleranceNs before `now_ns`.
void check_start_at(std::int64_t start_at_ns, std::int64_t now_ns);

// The identity of a trace as a sharded run records it: its exchange count, creation time and a
// digest of every request key in order. Shards of one trace agree on it; a different trace (or
// another filter of the same file, which is in the settings anyway) does not.
metrics::TraceIdentity input_identity(const LoadedTrace& input);
// The same, a trace's exchanges added one at a time in order (a streamed input: replay/feed.hpp).
class InputIdentity {
 public:
  void add(const Exchange& exchange);
  metrics::TraceIdentity identity(std::int64_t created_unix_ns) const;

 private:
  std::uint64_t exchanges_ = 0, keys_ = 0;
};

struct ShardFacts {
  metrics::TraceIdentity input_identity;
  std::size_t selected = 0;
  std::string host;
  std::optional<std::int64_t> start_at_ns;
  std::optional<std::int64_t> clock_offset_ns;
};
// The facts above put into a run's settings.
void add_shard_facts(metrics::RunSettings& settings, const ShardFacts& facts);

}  // namespace retrace::replay
