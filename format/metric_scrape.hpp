// (format 1.5) The target's /metrics over a run, as the trace keeps it: one MetricScrape a scrape,
// each a Record of its own among the exchanges (the layout and the versioning rule:
// format/trace.capnp's MetricScrape). Written by TraceWriter::write(const MetricScrape&), read
// through TraceReader::on_metrics; readers that predate 1.5 skip these records.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/enum_names.hpp"

namespace retrace {

// gauge: the value as read. counter: the increase since the previous scrape (0 at the first);
// a reset (a value below the previous one) counts from 0 and the scrape's note says so.
enum class SeriesKind : std::uint8_t { gauge, counter };
BOOST_DESCRIBE_ENUM(SeriesKind, gauge, counter)

struct MetricValue {
  std::string series;  // a normalised name (llm/exposition.hpp) or `name{labels}` as exposed
  SeriesKind kind = SeriesKind::gauge;
  double value = 0;
  bool operator==(const MetricValue&) const = default;
};

struct MetricScrape {
  std::int64_t offset_ns = 0;  // when the GET was sent, from the run's start (actual_send_ns's clock)
  std::int64_t took_ns = -1;   // how long the whole answer took
  std::int32_t in_flight = -1; // the client's requests in flight then; -1 not known
  std::vector<MetricValue> values;  // empty when the scrape failed
  std::string note;            // "" when clean; else what went wrong (unreachable, too large, ...)
  bool operator==(const MetricScrape&) const = default;
};

}  // namespace retrace
