// report/metric_series.hpp: a trace's /metrics series as JSON lines or CSV.
#include "report/metric_series.hpp"

#include <boost/json.hpp>
#include <ostream>

#include "base/json_text.hpp"
#include "report/text.hpp"

namespace retrace::report {
namespace {

std::string number_text(double value) { return json_text(boost::json::value(value)); }

}  // namespace

Recovery write_metric_series(const std::filesystem::path& path, std::ostream& out, bool csv,
                             MetricSeriesCount& count) {
  TraceReader reader(path);
  if (csv) out << csv_row({"t_us", "series", "kind", "value"});
  reader.on_metrics([&](const MetricScrape& scrape) {
    if (!out) return;
    ++count.scrapes;
    const std::int64_t t_us = scrape.offset_ns / 1000;
    auto line = [&](std::string_view series, std::string_view kind, double value) {
      ++count.values;
      if (csv) {
        out << csv_row({std::to_string(t_us), std::string(series), std::string(kind), number_text(value)});
        return;
      }
      out << json_text(boost::json::object{{"t_us", t_us}, {"series", series}, {"kind", kind}, {"value", value}})
          << '\n';
    };
    for (const auto& value : scrape.values)
      line(value.series, value.kind == SeriesKind::counter ? "counter" : "gauge", value.value);
    if (scrape.in_flight >= 0) line("client_in_flight", "gauge", scrape.in_flight);
    if (scrape.note.empty()) return;
    if (csv) out << csv_row({std::to_string(t_us), "note", "", scrape.note});
    else out << json_text(boost::json::object{{"t_us", t_us}, {"note", scrape.note}}) << '\n';
  });
  Exchange exchange;
  while (out && reader.next(exchange)) {
  }
  return reader.recovery();
}

}  // namespace retrace::report
