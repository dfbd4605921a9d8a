// The HTML run report's section on the server (issue 42): the run's /metrics series over time
// (running, waiting and the client's requests in flight on one chart; KV-cache usage on another),
// and, where the server said its own timings (format 1.6), the client's TTFT minus the server's and
// the queue's share of TTFT at p50 and p99. Fed each scrape as the trace is read
// (report/sweep_summary.hpp's StreamSinks::scrapes); memory bounded: past kMostPoints samples a
// line keeps every other one and samples half as often after that.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "format/trace.hpp"
#include "metrics/stats.hpp"
#include "report/svg.hpp"

namespace retrace::report {

class ServerCharts {
 public:
  static constexpr std::size_t kMostPoints = 4096;
  void add(const MetricScrape& scrape);
  // The section's charts (SVG); none when the trace holds no series and the server said no timings.
  std::vector<std::string> charts(const metrics::Stats& stats) const;

 private:
  std::vector<svg::Line> lines_{{"running", {}}, {"waiting", {}}, {"client in flight", {}}, {"KV usage", {}}};
  std::size_t stride_ = 1, seen_ = 0;
};

}  // namespace retrace::report
