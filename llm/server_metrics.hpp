// One /metrics page made into what the trace keeps of it (format/metric_scrape.hpp): series an
// alias names (llm/exposition.hpp) under their normalised name, summed over their label sets
// (a server with several engines reports one line per engine) or, for a fraction (kv_usage and
// the rates), averaged; every other series under its exposition name with its labels. Counters
// as the increase since the previous page: 0 at the first, where every series is listed; after
// it a counter that did not move is left out. A counter below its previous value was reset (the
// server restarted): it counts from 0 again, and the scrape's note says which.
#pragma once

#include <string>
#include <unordered_map>

#include "format/metric_scrape.hpp"
#include "llm/exposition.hpp"

namespace retrace::llm {

class SeriesDeltas {
 public:
  // Fills `scrape.values` from `page`, and adds to `scrape.note` what was wrong with it
  // (malformed lines, samples dropped, counter resets).
  void take(const Exposition& page, MetricScrape& scrape);

 private:
  std::unordered_map<std::string, double> last_;  // each counter's last value as exposed
  bool first_ = true;
};

}  // namespace retrace::llm
