// The target's Prometheus /metrics scraped over a measured run and kept in the run's trace
// (format 1.5 MetricScrape records, written by the run's writer thread among the exchanges).
//
// A baseline as the run's clock starts (before its first request), then one every interval on a
// thread of its own (a tick missed while a scrape ran is skipped, not caught up), and one after
// the last response. Each GET carries `X-Retrace-Probe: 1`, so a recording proxy in between keeps
// it out of its trace. Its time is when the GET was sent, on the run's clock (the offsets every
// exchange's actual_send_ns is on); took_ns says how long the answer took.
//
// One connection is kept alive for the loop's GETs (net/kept_get.hpp). The baseline and the last
// scrape read the whole page; the loop's skip the samples of histogram and summary families
// unread (nothing the alias table names is one, and they are most of a vLLM page), so a
// distribution's counters move from the baseline to the last scrape in one delta, the run's.
//
// A target without a /metrics (no answer, or not 200 at the baseline) is one line on stderr and
// one scrape with its note; the run goes on unscraped. A page over Options::Scrape::body_limit
// is the same: said once, and no more are asked for. A failure later in the run is that scrape's
// note, and the next tick tries again.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <boost/asio/ssl/context.hpp>

#include "base/clock.hpp"
#include "format/metric_scrape.hpp"
#include "llm/server_metrics.hpp"
#include "net/kept_get.hpp"
#include "net/url.hpp"
#include "replay/in_flight.hpp"
#include "replay/replay.hpp"

namespace retrace::replay {

class Scraper {
 public:
  // `target` is the run's target (its /metrics is scraped unless settings.url names a page);
  // `say` gets the one line a target without a usable /metrics is worth. Throws
  // std::invalid_argument for a settings.url that is not an http(s) URL. `clock` and `in_flight`
  // outlive the scraper.
  Scraper(const Options::Scrape& settings, const net::Url& target,
          std::shared_ptr<boost::asio::ssl::context> tls, const Clock& clock, InFlight& in_flight,
          std::function<void(std::string_view)> say);
  ~Scraper();  // stops the loop
  Scraper(const Scraper&) = delete;
  Scraper& operator=(const Scraper&) = delete;

  // Takes the baseline (blocking: one GET) and starts the loop; offsets are from `run_start`.
  void begin(Clock::time_point run_start);
  // Stops the loop and takes the last scrape (blocking).
  void end();
  // The scrapes taken and not yet handed out, oldest first. Any thread.
  std::vector<MetricScrape> take();

 private:
  void scrape_once(bool whole_page);
  void loop();

  Options::Scrape settings_;
  net::Url url_;
  std::string path_;
  std::unique_ptr<net::KeptGet> get_;  // made at begin(): the loop's thread only, as deltas_
  std::shared_ptr<boost::asio::ssl::context> tls_;
  const Clock& clock_;
  InFlight& in_flight_;
  std::function<void(std::string_view)> say_;
  Clock::time_point run_start_{};
  llm::SeriesDeltas deltas_;  // the loop's thread only (begin and end run while it does not)
  bool given_up_ = false;     // likewise
  bool baseline_taken_ = false;

  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::vector<MetricScrape> taken_;
  std::thread thread_;
};

}  // namespace retrace::replay
