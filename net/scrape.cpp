// net/scrape.hpp: the /metrics loop of a run.
#include "net/scrape.hpp"

#include <chrono>
#include <stdexcept>
#include <thread>

#include "llm/exposition.hpp"

namespace retrace::net {
namespace {

std::string mib(std::size_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }

std::int64_t nanoseconds(std::chrono::steady_clock::duration duration) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(duration).count();
}

}  // namespace

Scraper::Scraper(const ScrapeSettings& settings, const Url& target,
                 std::shared_ptr<boost::asio::ssl::context> tls, const Clock& clock,
                 std::function<std::int32_t()> in_flight, std::function<void(std::string_view)> say,
                 boost::asio::io_context* io)
    : settings_(settings), url_(target), path_("/metrics"), io_(io), tls_(std::move(tls)), clock_(clock),
      in_flight_(std::move(in_flight)), say_(std::move(say)) {
  if (!settings.url.empty()) {
    try {
      url_ = parse_url(settings.url);
    } catch (const std::exception& e) {
      throw std::invalid_argument("--scrape-url " + settings.url + ": " + e.what() +
                                  " (write the page's whole URL, e.g. http://127.0.0.1:9400/metrics)");
    }
    path_ = url_.base_path.empty() ? "/" : url_.base_path;
    url_.base_path.clear();
    if (url_.tls() && !tls_)
      throw std::invalid_argument("--scrape-url " + settings.url +
                                  ": an https page needs an https target (its TLS settings)");
  }
}

Scraper::~Scraper() {
  if (timer_) timer_->cancel();  // a run ended by an exception: its handlers go with get_'s io()
}

MetricScrape Scraper::started() {
  MetricScrape scrape;
  scrape.offset_ns = nanoseconds(clock_.now() - run_start_);
  scrape.in_flight = in_flight_ ? in_flight_() : -1;
  return scrape;
}

std::chrono::steady_clock::duration Scraper::timeout() const {
  return std::max<std::chrono::steady_clock::duration>(settings_.interval * 4, std::chrono::seconds(2));
}

void Scraper::scrape_once(bool whole_page) {
  if (given_up_) return;
  auto scrape = started();
  auto page = get_->get(timeout());  // marked X-Retrace-Probe
  kept(std::move(scrape), std::move(page), whole_page);
}

void Scraper::kept(MetricScrape scrape, Fetched page, bool whole_page) {
  scrape.took_ns = nanoseconds(clock_.now() - run_start_) - scrape.offset_ns;
  std::string where = url_.str() + (path_ == "/" ? "" : path_);
  if (page.status == 200) {
    deltas_.take(llm::parse_exposition(page.body, llm::kMaxPageSamples, whole_page), scrape);
  } else {
    bool too_large = page.error.find("body limit") != std::string::npos;
    scrape.note = too_large ? "the page passed " + mib(settings_.body_limit) + " and was not read"
                  : page.status != 0 ? "HTTP " + std::to_string(page.status)
                                     : page.error;
    // Without a baseline there is no series to keep; a page too large will stay too large.
    if (too_large || !baseline_taken_) {
      given_up_ = true;
      say_(too_large ? "the server's " + where + " passed " + mib(settings_.body_limit) +
                           " and is not scraped; the run goes on without the server's series"
                     : "no usable " + where + " (" + scrape.note +
                           "); the run goes on without the server's series (--scrape-url names "
                           "another page, --no-scrape stops asking)");
    }
  }
  baseline_taken_ = true;
  std::lock_guard lock(mutex_);
  taken_.push_back(std::move(scrape));
}

void Scraper::begin(Clock::time_point run_start) {
  run_start_ = run_start;
  get_ = std::make_unique<KeptGet>(url_, tls_, path_, settings_.body_limit);
  scrape_once(true);
  if (given_up_) return;
  timer_ = std::make_unique<boost::asio::steady_timer>(get_->io());
  looping_ = true;
  next_ = std::chrono::steady_clock::now() + settings_.interval;
  arm();
}

void Scraper::arm() {
  timer_->expires_at(next_);
  timer_->async_wait([this](boost::system::error_code ec) {
    if (ec || !looping_) return;
    tick(false);
  });
}

void Scraper::tick(bool whole_page) {
  getting_ = true;
  get_->async_get(timeout(), [this, whole_page, scrape = started()](Fetched page) mutable {
    getting_ = false;
    kept(std::move(scrape), std::move(page), whole_page);
    after_tick();
  });
}

void Scraper::after_tick() {
  if (looping_ && !given_up_) {
    auto now = std::chrono::steady_clock::now();
    while (next_ <= now) next_ += settings_.interval;  // a tick missed while scraping is skipped
    return arm();
  }
  if (!on_ended_) return;
  if (baseline_taken_ && !given_up_ && !ended_) {  // end_async's last scrape
    ended_ = true;
    return tick(true);
  }
  auto done = std::move(on_ended_);
  on_ended_ = nullptr;
  done();
}

void Scraper::begin_async(Clock::time_point run_start) {
  run_start_ = run_start;
  get_ = std::make_unique<KeptGet>(url_, tls_, path_, settings_.body_limit, io_);
  timer_ = std::make_unique<boost::asio::steady_timer>(get_->io());
  looping_ = true;
  next_ = std::chrono::steady_clock::now();
  tick(true);  // the baseline; after_tick() then arms the loop
}

void Scraper::end_async(std::function<void()> done) {
  on_ended_ = std::move(done);
  if (!looping_) return after_tick();  // never begun
  looping_ = false;
  timer_->cancel();
  if (!getting_) after_tick();  // else the GET under way ends, then after_tick()
}

void Scraper::run_until(std::chrono::steady_clock::time_point deadline) {
  if (looping_) {
    auto& io = get_->io();
    io.restart();
    io.run_until(deadline);  // returns early only when the loop has stopped (given up)
  }
  std::this_thread::sleep_until(deadline);
}

void Scraper::end() {
  if (looping_) {
    looping_ = false;
    timer_->cancel();
    auto& io = get_->io();
    io.restart();
    io.run();  // the cancelled tick, and a GET under way (within its timeout)
  }
  if (baseline_taken_) scrape_once(true);
}

std::vector<MetricScrape> Scraper::take() {
  std::lock_guard lock(mutex_);
  std::vector<MetricScrape> out;
  out.swap(taken_);
  return out;
}

}  // namespace retrace::net
