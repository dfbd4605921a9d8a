// A /metrics scrape record (format 1.5, trace.capnp's MetricScrape) <-> format/metric_scrape.hpp,
// field by field. An unknown SeriesKind (a newer minor) reads as a gauge.
#include "format/wire.hpp"

namespace retrace::detail {

void fill_metrics(wire::MetricScrape::Builder out, const MetricScrape& scrape) {
  out.setOffsetNs(scrape.offset_ns);
  out.setTookNs(scrape.took_ns);
  out.setInFlight(scrape.in_flight);
  auto values = out.initValues(static_cast<unsigned>(scrape.values.size()));
  for (unsigned i = 0; i < scrape.values.size(); ++i) {
    const MetricValue& value = scrape.values[i];
    auto value_out = values[i];
    value_out.setSeries(kj::StringPtr(value.series.c_str(), value.series.size()));
    value_out.setKind(static_cast<wire::SeriesKind>(value.kind));
    value_out.setValue(value.value);
  }
  if (!scrape.note.empty()) out.setNote(kj::StringPtr(scrape.note.c_str(), scrape.note.size()));
}

void read_metrics(wire::MetricScrape::Reader in, MetricScrape& scrape, ListBudget& budget) {
  scrape.offset_ns = in.getOffsetNs();
  scrape.took_ns = in.getTookNs();
  scrape.in_flight = in.getInFlight();
  auto values = in.getValues();
  scrape.values.resize(budget.take(values.size(), "metric values"));
  for (unsigned i = 0; i < values.size(); ++i) {
    auto value_in = values[i];
    MetricValue& value = scrape.values[i];
    auto series = value_in.getSeries();
    value.series.assign(series.begin(), series.size());
    auto kind = static_cast<unsigned>(value_in.getKind());
    value.kind = kind <= 1 ? static_cast<SeriesKind>(kind) : SeriesKind::gauge;
    value.value = value_in.getValue();
  }
  auto note = in.getNote();
  scrape.note.assign(note.begin(), note.size());
}

}  // namespace retrace::detail
