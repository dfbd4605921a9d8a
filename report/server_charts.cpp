// report/server_charts.hpp: the server's series and timings as charts.
#include "report/server_charts.hpp"

namespace retrace::report {

void ServerCharts::add(const MetricScrape& scrape) {
  if (scrape.values.empty()) return;  // a failed scrape is no sample
  if (seen_++ % stride_ != 0) return;
  const double t = static_cast<double>(scrape.offset_ns) / 1e9;
  for (const auto& value : scrape.values) {
    if (value.series == "running") lines_[0].points.emplace_back(t, value.value);
    else if (value.series == "waiting") lines_[1].points.emplace_back(t, value.value);
    else if (value.series == "kv_usage") lines_[3].points.emplace_back(t, 100 * value.value);
  }
  if (scrape.in_flight >= 0) lines_[2].points.emplace_back(t, scrape.in_flight);
  bool full = false;
  for (const auto& line : lines_) full = full || line.points.size() >= kMostPoints;
  if (!full) return;
  for (auto& line : lines_) {  // every other sample, and half as many from now on
    std::size_t kept = 0;
    for (std::size_t i = 0; i < line.points.size(); i += 2) line.points[kept++] = line.points[i];
    line.points.resize(kept);
  }
  stride_ *= 2;
}

std::vector<std::string> ServerCharts::charts(const metrics::Stats& stats) const {
  std::vector<std::string> out;
  std::vector<svg::Line> batch(lines_.begin(), lines_.begin() + 3);
  if (!batch[0].points.empty() || !batch[1].points.empty())
    out.push_back(svg::lines_chart("The server's batch and queue over the run, and the client's requests in flight",
                                   "seconds into the run", "requests", batch));
  if (!lines_[3].points.empty())
    out.push_back(svg::lines_chart("KV-cache usage over the run", "seconds into the run", "% of the cache",
                                   {lines_[3]}, 100));
  auto bars = [](const metrics::Percentiles& p) {
    return std::vector<svg::Bar>{{"p50", p.at(50), {}, {}, {}}, {"p99", p.at(99), {}, {}, {}}};
  };
  if (stats.ttft_minus_server.count > 0)
    out.push_back(svg::bar_chart("Client TTFT minus the server's (network, proxy, HTTP front)", "ms",
                                 bars(stats.ttft_minus_server)));
  if (stats.queue_share.count > 0)
    out.push_back(svg::bar_chart("Queue time as a share of TTFT, as the server said it", "%",
                                 bars(stats.queue_share)));
  return out;
}

}  // namespace retrace::report
