// `retrace inspect`'s view of a trace: what it holds (counts by kind, the time span), how big it
// is, whether it is whole; summarised in one pass over the exchanges and rendered as text for a
// person or one JSON object (schema_version, file, header, counts, time_span, sizes, recovery).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "format/output_tokens.hpp"
#include "format/trace.hpp"

namespace retrace::report {

// The counts of a trace's exchanges, added one exchange at a time.
struct TraceCounts {
  std::uint64_t exchanges = 0;
  std::uint64_t with_expected = 0;
  std::map<std::string, std::uint64_t> errors;       // by kind
  std::map<std::string, std::uint64_t> token_kinds;  // choices by kind
  std::map<std::uint16_t, std::uint64_t> statuses;
  std::set<std::string> sessions;
  OutputTokenTally tokens;  // output_tokens(): the server's usage when present, else counted
  std::uint64_t choices = 0;
  std::int64_t first_start_ns = 0;  // 0: no wall-clock times (imported traces)
  std::int64_t last_end_ns = 0;
  // The trace's own clock, for traces without wall-clock times (an imported Mooncake or Bailian
  // trace's rows carry their send offsets): the earliest send and the latest send or end.
  std::int64_t first_offset_ns = INT64_MAX;
  std::int64_t last_offset_ns = 0;
  std::uint64_t min_id = 0;
  std::uint64_t max_id = 0;

  void add(const Exchange& exchange);
};

// One segment of a segment set (format/segments.hpp), as inspect lists it.
struct SegmentRow {
  std::uint64_t number = 0;
  std::uint64_t exchanges = 0;
  std::uint64_t bytes = 0;
  std::int64_t first_start_ns = 0;  // wall clock; 0 when none
  std::int64_t last_end_ns = 0;
  // "whole"; "missing" (a gap in the numbers); "torn" (cut short: the last one is the segment
  // being written, or a crash); "damaged" (frames skipped, or unreadable).
  std::string state = "whole";
};

// Everything inspect shows of one trace file, or of a segment set (then also `segments`).
struct Inspection {
  std::string path;
  TraceHeader header;
  Recovery recovery;
  std::uint64_t file_bytes = 0;
  std::uint64_t decompressed_bytes = 0;
  bool has_index = false;
  TraceCounts counts;
  bool segment_set = false;
  std::vector<SegmentRow> segments;  // in number order, gaps included (one row a gap)
};

// Reads the whole trace at `path` once (exchanges are counted, never held); throws TraceError.
Inspection inspect_trace(const std::string& path);

std::string render_inspection_text(const Inspection& inspection);
// One JSON object and a newline.
std::string render_inspection_json(const Inspection& inspection);

}  // namespace retrace::report
