// `retrace merge`: one run from the N shard runs of one replay (`replay --shard I/N`, usually with
// a common --start-at; replay/shard.hpp), as if one client had made it.
//
// Contract:
// - Refused before anything is written (MergeRefused, exit 2): a file that is not a sharded
//   replay run; shards of different input traces (the "input_identity" their settings record);
//   different shard counts; a shard index given twice; settings that differ other than in shard,
//   start_at, host, clock_offset_ns, selected and run (the differing keys named).
// - A shard index none of the files is (a shard that never started) is merged without: the result
//   names it (absent_shards) and the caller decides, as for missing exchanges below.
// - The merge is streaming: one reader per shard and a k-way merge on the common clock (a shard
//   whose start_at is later is shifted by the difference, on its intended and actual send times).
//   Each shard's file is in completion order (replay writes an exchange when it ends), so the
//   merge is by completion (send + end), and the merged file is in completion order as an
//   unsharded run's is; a merge by intended send time would have to sort within each shard, which
//   bounded memory rules out. Memory: one frame per shard, plus the merged file's index that the
//   writer builds (about 32 bytes per exchange, as for any trace). The merged exchanges get ids
//   0, 1, ... in that order and keep their source ids, so diff aligns them with an unsharded run
//   as with any other.
// - The merged header is shard 0's with settings saying: "shards" (each one's index, file, host,
//   start_at, clock_offset_ns — null for a shard that never finished — and selected), no "shard",
//   and the merged run's totals where a shard's figure is per shard: a closed loop's concurrency,
//   --requests and --limit are the sums ("concurrency_per_shard", "requests_per_shard" and
//   "limit_per_shard" keep the shard's), so a report's schedule line says what was sent; a live
//   run's "live_tool_turns" are the shards' summed. The
//   exchanges' and header's labels "run" and "concurrency" say the merged run's.
// - Clock agreement: each shard's clock_offset_ns is how late it began by its own clock; the
//   spread across shards (max - min, "clock_offset_spread_ns") bounds how far apart their
//   schedules started as their hosts tell it. Past kClockSpreadWarnNs merge warns: hosts in one
//   datacenter under NTP agree within 1-5 ms, so more means a shard started late or a clock is off.
// - A shard with fewer exchanges than it selected (killed mid-run: its OUT.partial, with a torn
//   tail; or stopped with Ctrl-C) is merged with what it has; the result lists how many of each
//   shard's selection are missing, and the caller decides (merge exits 1 unless --allow-missing).
//   Given the source trace (`--trace SRC`, which must have the shards' input identity), each
//   shard's selection is recomputed from it with replay's own rule (select_exchanges, from the
//   settings' filters, sessions, limit and shard) and the missing exchanges are named by source id.
//   That loads SRC whole, as replay does; without it merge counts and holds no ids.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "format/trace.hpp"

namespace retrace::replay {

inline constexpr std::int64_t kClockSpreadWarnNs = 5'000'000;

class MergeRefused : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

struct MergedShard {
  std::filesystem::path path;
  std::size_t index = 0;
  std::string host;
  std::string start_at;                       // RFC 3339; "" when the shard had no --start-at
  std::optional<std::int64_t> clock_offset_ns;  // absent when the shard did not finish
  std::uint64_t selected = 0;                 // exchanges the shard was to send
  std::uint64_t present = 0;                  // exchanges found in its file
  Recovery recovery;
  std::uint64_t missing() const { return present < selected ? selected - present : 0; }
  std::vector<std::uint64_t> missing_ids;     // source ids, ascending; with a source trace only
};

struct MergeResult {
  std::vector<MergedShard> shards;  // by index: the shards given
  std::size_t shard_count = 0;      // N of --shard I/N
  // Shards none of the given files is (one that never started: a pod held by an image pull): the
  // rest are merged without them, and these named; with a source trace, each one's exchanges (as
  // many as it was to send, absent_selected) count as missing.
  std::vector<std::size_t> absent_shards;
  std::vector<std::uint64_t> absent_selected;  // with a source trace only, by absent_shards' order
  std::uint64_t exchanges = 0;
  std::uint64_t missing = 0;
  int total_concurrency = 0;        // closed loop; 0 otherwise
  // max - min of the shards' clock offsets, when at least two finished and recorded one.
  std::optional<std::int64_t> clock_offset_spread_ns;
};

// Merges `shards` into `out` (created; the caller applies the no-overwrite rule). Throws
// MergeRefused for the refusals above, TraceError for unreadable files.
struct MergeOptions {
  std::optional<std::filesystem::path> source_trace;  // --trace SRC: name the missing exchanges
  WriterOptions writer;
};
MergeResult merge_shards(const std::vector<std::filesystem::path>& shards,
                         const std::filesystem::path& out, const MergeOptions& options = {});

}  // namespace retrace::replay
