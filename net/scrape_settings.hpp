// What a run's /metrics scrape loop (net/scrape.hpp) is told: replay's, sweep's and study's
// --scrape-interval, --scrape-url and --no-scrape, and record's.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

namespace retrace::net {

struct ScrapeSettings {
  bool enabled = true;                        // --no-scrape turns it off
  std::chrono::milliseconds interval{250};    // --scrape-interval
  std::string url;                            // --scrape-url: the page's own URL ("" = target's /metrics)
  std::size_t body_limit = 8u << 20;          // a larger page is not kept, and scraping stops
};

}  // namespace retrace::net
