// Trace.metrics(): the target's /metrics as the run scraped it (format 1.5, format/metric_scrape.hpp),
// one row per series value of each scrape (a failed scrape: one row with its note and no value).
#include "python/tables.hpp"

namespace retrace::python {

py::object metrics_table(const std::filesystem::path& path, Warnings& warnings) {
  NumberColumn<double> offset_ms, took_ms, value;
  NumberColumn<std::uint32_t> scrape;
  NullableColumn in_flight;
  CategoryColumn series, kind;
  TextColumn note;
  {
    py::gil_scoped_release unlocked;
    TraceReader reader(path);
    std::uint32_t scrapes = 0;
    reader.on_metrics([&](const MetricScrape& at) {
      auto row = [&](const MetricValue* sample) {
        scrape.push(scrapes);
        offset_ms.push(static_cast<double>(at.offset_ns) / 1e6);
        took_ms.push(at.took_ns >= 0 ? static_cast<double>(at.took_ns) / 1e6 : kNaN);
        in_flight.push(at.in_flight >= 0 ? std::optional<std::int64_t>(at.in_flight) : std::nullopt);
        if (sample) series.push(sample->series), kind.push(enum_name(sample->kind)), value.push(sample->value);
        else series.push_absent(), kind.push_absent(), value.push(kNaN);
        if (at.note.empty()) note.push_absent();
        else note.push(at.note);
      };
      if (at.values.empty()) row(nullptr);
      for (const MetricValue& sample : at.values) row(&sample);
      ++scrapes;
    });
    ExchangeOutputs outputs;
    while (reader.next(outputs)) {
    }
    warnings.add(path, reader.recovery());
  }
  Table table;
  table.add("scrape", std::move(scrape.values));
  table.add("offset_ms", std::move(offset_ms.values));
  table.add("series", std::move(series));
  table.add("kind", std::move(kind));
  table.add("value", std::move(value.values));
  table.add("took_ms", std::move(took_ms.values));
  table.add("in_flight", std::move(in_flight));
  table.add("note", std::move(note));
  return table.frame();
}

}  // namespace retrace::python
