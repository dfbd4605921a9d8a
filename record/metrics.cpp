#include "record/metrics.hpp"

#include "base/prometheus.hpp"
#include "record/trace_sink.hpp"

namespace retrace::record {

SegmentCounts segment_counts(const TraceSink& sink) {
  const SegmentCounters& counters = sink.segment_counters();
  return {counters.segments_opened.load(std::memory_order_relaxed),
          counters.segments_deleted.load(std::memory_order_relaxed)};
}

std::string metrics_text(const RecordCounters& counters) {
  PrometheusText text;
  constexpr std::string_view exchanges = "retrace_record_exchanges_total";
  text.family(exchanges, "counter",
              "Exchanges that ended, by outcome: in the trace (recorded, rejected, cut, or the "
              "upstream error kind) or forwarded and kept out of it (sampled_out, probe, excluded, "
              "over_limit).");
  for (std::size_t kind = 0; kind < counters.written_by_kind.size(); ++kind) {
    auto name = kind == 0 ? std::string_view("recorded") : to_string(static_cast<ErrorKind>(kind));
    text.sample(exchanges, {{"outcome", name}}, counters.written_by_kind[kind]);
  }
  text.sample(exchanges, {{"outcome", "sampled_out"}}, counters.sampled_out);
  text.sample(exchanges, {{"outcome", "probe"}}, counters.probes);
  text.sample(exchanges, {{"outcome", "excluded"}}, counters.excluded);
  text.sample(exchanges, {{"outcome", "over_limit"}}, counters.over_limit);

  auto one = [&](std::string_view name, std::string_view type, std::string_view help, auto value) {
    text.family(name, type, help);
    text.sample(name, {}, value);
  };
  one("retrace_record_exchanges_lost_total", "counter",
      "Exchanges captured but not in the trace because a write failed (a full disk).", counters.lost);
  one("retrace_record_bytes_written_total", "counter", "Bytes written to the trace.",
      counters.bytes_written);
  one("retrace_record_segments_total", "counter", "Trace segments opened.", counters.segments.opened);
  one("retrace_record_segments_deleted_total", "counter", "Trace segments deleted by retention.",
      counters.segments.deleted);
  one("retrace_record_in_flight", "gauge", "Exchanges begun and not yet ended.",
      static_cast<std::uint64_t>(std::max<std::int64_t>(counters.in_flight, 0)));
  one("retrace_record_flush_lag_seconds", "gauge",
      "How long the oldest exchange written but not yet flushed to the file has waited (0 when "
      "everything written is flushed).",
      counters.flush_lag_seconds);
  return text.take();
}

}  // namespace retrace::record
