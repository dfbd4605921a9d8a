// Rendering of replay/stats figures (replay::Stats): a terminal table and JSON.
#pragma once

#include <string>
#include <vector>
#include <string_view>

#include "replay/replay.hpp"

namespace retrace::report {

struct StatsContext {
  std::string title;       // e.g. the trace path or the run name
  bool interrupted = false;  // a partial run (Ctrl-C)
};

// Human-readable report, one figure per line, latency rows as p50/p90/p99/max in ms.
std::string render_stats_text(const replay::Stats& stats, const StatsContext& context = {});

// One JSON object; latencies in milliseconds under "ttft_ms", "itl_ms", ... with p50/p90/p99/
// max/mean/count. Fields that do not apply (goodput without --slo) are absent.
std::string render_stats_json(const replay::Stats& stats, const StatsContext& context = {});

// One JSON report as an object, several as an array (one per trace or repeat), newline-ended.
std::string join_json_reports(const std::vector<std::string>& reports);

}  // namespace retrace::report
