// Internal to shadow/: a mirror leg's /metrics over the run (the control's, the candidate's), into
// its own trace on that trace's clock. The one scrape loop (net/scrape.hpp) on an io_context of its
// own, run by a thread of its own (the mirror's thread serves its exchanges), from the run's start
// until stop(), which takes the sample after the mirror's drain. The leg's trace thread takes the
// scrapes (record::TraceSink::scrapes). The primary's is record's (RecordOptions::scrape).
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string_view>
#include <thread>
#include <vector>

#include "net/scrape.hpp"

namespace retrace::shadow {

class LegScrape {
 public:
  LegScrape(const net::ScrapeSettings& settings, const net::Url& url,
            std::shared_ptr<boost::asio::ssl::context> tls, const Clock& clock, Clock::time_point run_start,
            std::function<void(std::string_view)> say)
      : scraper_(settings, url, std::move(tls), clock, nullptr, std::move(say)),
        thread_([this, run_start] {
          scraper_.begin(run_start);
          // A stop is seen within 100 ms; the loop's own ticks wake it otherwise.
          while (!stopping_.load())
            scraper_.run_until(std::chrono::steady_clock::now() + std::chrono::milliseconds(100));
          scraper_.end();
        }) {}
  ~LegScrape() { stop(); }
  LegScrape(const LegScrape&) = delete;
  LegScrape& operator=(const LegScrape&) = delete;

  // Ends the loop with its last scrape. Idempotent.
  void stop() {
    stopping_ = true;
    if (thread_.joinable()) thread_.join();
  }
  std::vector<MetricScrape> take() { return scraper_.take(); }  // any thread

 private:
  net::Scraper scraper_;
  std::atomic<bool> stopping_{false};
  std::thread thread_;  // last: started once the rest is ready
};

}  // namespace retrace::shadow
