// Rendering of metrics/stats figures (metrics::Stats): terminal text, Markdown and JSON, each with
// the header that says what was measured (server, model, schedule, trace) and the percentiles
// asked for.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "metrics/stats.hpp"
#include "report/header.hpp"

namespace retrace::report {

// p50, p90, p95, p99: what `--percentiles` gives when it is not set.
inline const std::vector<double> kDefaultPercentiles{50, 90, 95, 99};

// "50,90,95,99.9" -> {50, 90, 95, 99.9}; throws std::invalid_argument naming the bad item.
std::vector<double> parse_percentiles(std::string_view text);

// "p50", "p99.9": a percentile's column name and JSON key.
std::string percentile_name(double percent);

struct StatsContext {
  std::string title;         // e.g. the trace path or the run name
  bool interrupted = false;  // a partial run (Ctrl-C)
  std::optional<ReportHeader> header;  // what was measured; printed first when given
  std::vector<double> percentiles = kDefaultPercentiles;
  // Terminal columns the text may use; 0 = no limit. A latency table wider than this is printed
  // as one line per figure instead, so it never wraps.
  std::size_t width = 0;
};

// Human-readable report, one figure per line; latencies in ms as a table of the percentiles,
// max, mean and standard deviation.
std::string render_stats_text(const metrics::Stats& stats, const StatsContext& context = {});

// The same figures as Markdown: a heading, the header line, a figures table and a latency table.
std::string render_stats_markdown(const metrics::Stats& stats, const StatsContext& context = {});

// One JSON object (plain decimals, null for what is absent or does not apply, schema_version);
// latencies in milliseconds under "ttft_ms", "itl_ms", ... with count, the percentiles, max, mean
// and stddev.
std::string render_stats_json(const metrics::Stats& stats, const StatsContext& context = {});

// One JSON report as an object, several as an array (one per trace or repeat), newline-ended.
std::string join_json_reports(const std::vector<std::string>& reports);

}  // namespace retrace::report
