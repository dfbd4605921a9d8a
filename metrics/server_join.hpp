// The run's /metrics series joined to each exchange (format/server_said.hpp's ServerState): the
// server's running, waiting and KV usage at the exchange's send, first token and end, and the
// preemptions over its life. Run on the trace's writer thread (replay's run writer, record's and
// shadow's trace thread), which adds each scrape as its answer arrives and joins each exchange as
// it is written, so a moment's sample is the latest scrape sent
// at or before it whose answer had arrived by then (sample and hold; its scrape_ns says how old).
// A failed scrape (no values) is not a sample. Bounded: the last kMostPoints scrapes are kept (18
// hours at the default 4 Hz); an exchange older than them joins as not known. Each join is
// O(log n) (binary search, preemptions as running sums).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>

#include "format/trace.hpp"

namespace retrace::metrics {

class ServerSeries {
 public:
  static constexpr std::size_t kMostPoints = 1u << 18;
  // Scrapes in the order they were taken (offset_ns growing).
  void add(const MetricScrape& scrape);
  // Not known (defaults) before the first usable scrape or for an exchange never sent.
  ServerState join(const Exchange& exchange) const;

 private:
  struct Point {
    std::int64_t offset_ns;
    double running, waiting, kv_usage;
    double preemptions_sum;  // the counter's increases up to and including this scrape
  };
  ServerSample at(std::int64_t offset_ns) const;
  const Point* last_at_or_before(std::int64_t offset_ns) const;

  std::deque<Point> points_;
  double preemptions_sum_ = 0;
  bool preemptions_seen_ = false;
};

}  // namespace retrace::metrics
