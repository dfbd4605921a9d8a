// `retrace export --metrics`: the target's /metrics series a replayed run's trace keeps (format
// 1.5 MetricScrape records), one value a line, on the trace's own clock in microseconds:
//   {"t_us":120034,"series":"running","kind":"gauge","value":3}
// then, for each scrape, the client's own line, series "client_in_flight", and where a scrape
// went wrong {"t_us":...,"note":"..."}; or CSV: t_us,series,kind,value (notes as series "note",
// the text in the value column).
#pragma once

#include <filesystem>
#include <iosfwd>

#include "format/trace.hpp"

namespace retrace::report {

struct MetricSeriesCount {
  std::size_t scrapes = 0;
  std::size_t values = 0;
};

// Writes every scrape of `path` to `out`; stops quietly when `out` fails (a closed pipe).
// Damage is the reader's Recovery, returned for the caller to say.
Recovery write_metric_series(const std::filesystem::path& path, std::ostream& out, bool csv,
                             MetricSeriesCount& count);

}  // namespace retrace::report
