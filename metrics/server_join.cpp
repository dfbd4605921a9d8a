// metrics/server_join.hpp: the series at an exchange's moments.
#include "metrics/server_join.hpp"

#include <algorithm>

namespace retrace::metrics {

void ServerSeries::add(const MetricScrape& scrape) {
  if (scrape.values.empty()) return;
  Point point{scrape.offset_ns, -1, -1, -1, 0};
  for (const auto& value : scrape.values) {
    if (value.series == "running") point.running = value.value;
    else if (value.series == "waiting") point.waiting = value.value;
    else if (value.series == "kv_usage") point.kv_usage = value.value;
    else if (value.series == "preemptions") {
      preemptions_seen_ = true;
      preemptions_sum_ += value.value;
    }
  }
  point.preemptions_sum = preemptions_sum_;
  if (!points_.empty() && point.offset_ns < points_.back().offset_ns) return;  // out of order: not a sample
  points_.push_back(point);
  if (points_.size() > kMostPoints) points_.pop_front();
}

const ServerSeries::Point* ServerSeries::last_at_or_before(std::int64_t offset_ns) const {
  auto after = std::upper_bound(points_.begin(), points_.end(), offset_ns,
                                [](std::int64_t t, const Point& p) { return t < p.offset_ns; });
  return after == points_.begin() ? nullptr : &*std::prev(after);
}

ServerSample ServerSeries::at(std::int64_t offset_ns) const {
  const Point* point = last_at_or_before(offset_ns);
  if (!point) return {};
  return {point->offset_ns, point->running, point->waiting, point->kv_usage};
}

ServerState ServerSeries::join(const Exchange& exchange) const {
  ServerState state;
  const auto send = exchange.actual_send_ns;
  if (points_.empty() || send < points_.front().offset_ns) return state;
  state.at_send = at(send);
  if (exchange.first_byte_ns >= 0) state.at_first_token = at(send + exchange.first_byte_ns);
  const auto end = send + std::max<std::int64_t>(exchange.end_ns, 0);
  state.at_end = at(end);
  if (preemptions_seen_) {
    const Point* before = last_at_or_before(send);
    const Point* last = last_at_or_before(end);
    state.preemptions = before && last ? last->preemptions_sum - before->preemptions_sum : 0;
  }
  return state;
}

}  // namespace retrace::metrics
