// Record's own figures, as its admin endpoint's GET /metrics shows them (record/admin.hpp), in
// Prometheus' text format (base/prometheus.hpp). Every exchange that ends is counted once in
// retrace_record_exchanges_total, under one outcome:
//   in the trace, by its error kind: recorded (no error), rejected (record answered 400/413/431
//     itself), cut, and the upstream's failures: connect, tls, timeout, reset, http_status,
//     protocol, server_error, truncated;
//   forwarded but kept out of it: sampled_out (--sample), probe (X-Retrace-Probe), excluded
//     (--include-path/--exclude-path), over_limit (after --max-exchanges).
// So the outcomes "in the trace" sum to the exchanges the trace holds once it is closed, each equal
// to the count of its error kind there (the e2e test compares them), and exchanges lost to a
// failed write are retrace_record_exchanges_lost_total. The counters are atomics the workers and
// the trace thread bump; a scrape only reads them.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "format/trace.hpp"

namespace retrace::record {

class TraceSink;

// The segments of the trace opened (one for a single file) and deleted by retention; the one
// place the writer's SegmentCounters (record/trace_output.hpp) are read for /metrics.
struct SegmentCounts {
  std::uint64_t opened = 1;
  std::uint64_t deleted = 0;
};
SegmentCounts segment_counts(const TraceSink& sink);

struct RecordCounters {
  std::array<std::uint64_t, kErrorKindCount> written_by_kind{};  // indexed by ErrorKind
  std::uint64_t sampled_out = 0, probes = 0, excluded = 0, over_limit = 0;
  std::uint64_t lost = 0;
  std::uint64_t bytes_written = 0;
  SegmentCounts segments;
  std::int64_t in_flight = 0;
  double flush_lag_seconds = 0;  // how long the oldest written, unflushed exchange has waited
};

std::string metrics_text(const RecordCounters& counters);

}  // namespace retrace::record
