// A server's Prometheus /metrics scraped over a run and kept in its trace (format 1.5
// MetricScrape records, written by the trace's writer thread among the exchanges): replay's
// target (sweep's and study's runs too) and record's upstream.
//
// A baseline as the run's clock starts (before its first request), then one every interval (a
// tick missed while a scrape ran is skipped, not caught up), and one after the last response.
// The loop has no thread of its own: it runs in the caller's sleep (run_until: replay's control
// thread between its progress ticks) or on the caller's io_context (record's control loop), so a
// scrape costs no wake-up of its own beyond its GET, and the scrapes reach the trace with the
// writer's own batches (take()), waking no one. Each GET
// carries `X-Retrace-Probe: 1`, so a recording proxy in between keeps it out of its trace. Its
// time is when the GET was sent, on the run's clock (the offsets every exchange's actual_send_ns
// is on); took_ns says how long the answer took.
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

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "base/clock.hpp"
#include "format/metric_scrape.hpp"
#include "llm/server_metrics.hpp"
#include "net/kept_get.hpp"
#include "net/scrape_settings.hpp"
#include "net/url.hpp"

namespace retrace::net {

class Scraper {
 public:
  // `target` is the run's target (its /metrics is scraped unless settings.url names a page);
  // `say` gets the one line a target without a usable /metrics is worth; `in_flight` says the
  // client's requests in flight at a scrape (-1: not known). Throws std::invalid_argument for a
  // settings.url that is not an http(s) URL. `clock` outlives the scraper. With `io`, the loop
  // runs on it (begin_async and end_async, from its thread), else on one of its own (begin,
  // run_until, end).
  Scraper(const ScrapeSettings& settings, const Url& target,
          std::shared_ptr<boost::asio::ssl::context> tls, const Clock& clock,
          std::function<std::int32_t()> in_flight, std::function<void(std::string_view)> say,
          boost::asio::io_context* io = nullptr);
  ~Scraper();  // stops the loop
  Scraper(const Scraper&) = delete;
  Scraper& operator=(const Scraper&) = delete;

  // Takes the baseline (blocking: one GET) and starts the loop; offsets are from `run_start`.
  void begin(Clock::time_point run_start);
  // Runs the loop until `deadline` (its ticks and GETs; a sleep when it has nothing to do): the
  // caller's sleep. begin(), run_until() and end() are called from one thread.
  void run_until(std::chrono::steady_clock::time_point deadline);
  // Stops the loop (a GET under way finishes first) and takes the last scrape (blocking).
  void end();
  // On the caller's io_context: the baseline's GET started, then the loop; and the loop stopped
  // and the last scrape taken, after which `done` runs (a GET under way finishes first).
  void begin_async(Clock::time_point run_start);
  void end_async(std::function<void()> done);
  // The scrapes taken and not yet handed out, oldest first. Any thread.
  std::vector<MetricScrape> take();

 private:
  std::chrono::steady_clock::duration timeout() const;  // a GET's
  MetricScrape started();  // a scrape's time and in-flight count, as its GET is sent
  void scrape_once(bool whole_page);  // blocking
  void tick(bool whole_page = false);  // a scrape's GET started, kept() when it is back
  void kept(MetricScrape scrape, Fetched page, bool whole_page);
  void after_tick();  // the next tick armed, or the last scrape taken (end_async)
  void arm();  // the timer to the next tick

  ScrapeSettings settings_;
  Url url_;
  std::string path_;
  boost::asio::io_context* io_;  // the caller's, or null
  std::unique_ptr<KeptGet> get_;  // made at begin(); the loop runs on its io()
  std::shared_ptr<boost::asio::ssl::context> tls_;
  const Clock& clock_;
  std::function<std::int32_t()> in_flight_;
  std::function<void(std::string_view)> say_;
  Clock::time_point run_start_{};
  llm::SeriesDeltas deltas_;  // the caller's thread only, as everything but taken_
  bool given_up_ = false;
  bool baseline_taken_ = false;
  bool looping_ = false;
  bool getting_ = false;            // a GET is under way
  bool ended_ = false;              // end_async's last scrape is started
  std::function<void()> on_ended_;  // end_async's, once the last scrape is taken
  std::chrono::steady_clock::time_point next_{};
  std::unique_ptr<boost::asio::steady_timer> timer_;  // on get_->io(): destroyed before it

  std::mutex mutex_;  // taken_ is handed to the writer's thread
  std::vector<MetricScrape> taken_;
};

}  // namespace retrace::net
