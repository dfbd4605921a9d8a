// metrics/distribution: exact percentiles up to the limit, a histogram of bounded size past it whose
// percentiles stay within the stated error of the exact ones, and a run's ITL kept that way.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include <boost/json.hpp>

#include "metrics/distribution.hpp"
#include "replay/replay.hpp"
#include "report/replay_report.hpp"

using namespace retrace;
using replay::Distribution;

namespace {

// Samples in milliseconds over six orders of magnitude (a microsecond to seconds), some negative
// (a schedule slip can be), from a fixed seed.
std::vector<double> spread_samples(std::size_t n) {
  std::mt19937_64 random(42);
  std::uniform_real_distribution<double> exponent(-3, 3.5);
  std::vector<double> samples;
  for (std::size_t i = 0; i < n; ++i) {
    double value = std::pow(10.0, exponent(random));
    samples.push_back(i % 17 == 0 ? -value : value);
  }
  return samples;
}

// What a percentile from the histogram may differ by: the sample's rounding to the microsecond,
// and the bucket's half-width above 32.768 ms.
double allowed(double exact) { return 0.0005 + std::fabs(exact) * Distribution::kRelativeError + 1e-12; }

void check_against_exact(const replay::Percentiles& p, std::vector<double> samples) {
  auto exact = replay::percentiles(samples);
  REQUIRE(p.count == exact.count);
  for (double percent : {0.01, 1.0, 10.0, 25.0, 50.0, 75.0, 90.0, 95.0, 99.0, 99.9, 100.0}) {
    INFO("p" << percent << ": " << p.at(percent) << " against " << exact.at(percent));
    CHECK(std::fabs(p.at(percent) - exact.at(percent)) <= allowed(exact.at(percent)));
  }
  CHECK(p.p50 == p.at(50));
  CHECK(p.p99 == p.at(99));
  CHECK(p.max == exact.max);
  CHECK(p.at(100) == exact.max);
  CHECK(p.mean == Approx(exact.mean).epsilon(1e-9));
  CHECK(p.stddev == Approx(exact.stddev).epsilon(1e-9));
}

}  // namespace

TEST_CASE("Up to its limit a distribution keeps every sample: exact nearest-rank percentiles") {
  Distribution distribution(1000);
  auto samples = spread_samples(1000);
  for (double v : samples) distribution.add(v);
  CHECK(distribution.exact());
  auto p = std::move(distribution).percentiles();
  auto exact = replay::percentiles(samples);
  CHECK(p.relative_error == 0);
  CHECK(p.sorted == exact.sorted);
  for (double percent : {1.0, 50.0, 90.0, 99.0, 100.0}) CHECK(p.at(percent) == exact.at(percent));
  CHECK(p.mean == exact.mean);
  CHECK(p.stddev == exact.stddev);
}

TEST_CASE("Past its limit a distribution counts samples in a histogram within the stated error") {
  Distribution distribution(1000);
  auto samples = spread_samples(200'000);
  for (double v : samples) distribution.add(v);
  CHECK_FALSE(distribution.exact());
  auto p = std::move(distribution).percentiles();
  CHECK(p.relative_error == Distribution::kRelativeError);
  CHECK(p.sorted.empty());
  check_against_exact(p, samples);
}

TEST_CASE("Below 32.768 ms a histogram's percentiles are the samples' to the microsecond") {
  Distribution distribution(10);
  std::vector<double> samples;
  for (int i = 0; i < 5000; ++i) samples.push_back(0.001 * (i * 7 % 32000));  // whole microseconds
  for (double v : samples) distribution.add(v);
  auto p = std::move(distribution).percentiles();
  auto exact = replay::percentiles(samples);
  for (double percent : {1.0, 33.0, 50.0, 90.0, 99.0})
    CHECK(std::round(p.at(percent) * 1000) == std::round(exact.at(percent) * 1000));
}

TEST_CASE("A histogram's size follows the largest sample, not the number of samples") {
  Distribution distribution(1000);
  std::mt19937_64 random(7);
  std::uniform_real_distribution<double> ms(0.1, 100);
  for (int i = 0; i < 100'000; ++i) distribution.add(ms(random));
  auto held = distribution.bytes();
  for (int i = 0; i < 2'000'000; ++i) distribution.add(ms(random));
  CHECK(distribution.count() == 2'100'000);
  CHECK(distribution.bytes() == held);
  CHECK(held < 1'000'000);  // every sample as a double would be 16.8 MB
}

TEST_CASE("A run's inter-token gaps past a million are counted in a histogram, within its error") {
  // 5,000 streamed exchanges of 257 tokens: 1,280,000 gaps, past the exact limit.
  std::vector<replay::ExchangeMetrics> metrics;
  std::vector<double> gaps_ms;
  std::mt19937_64 random(3);
  std::uniform_int_distribution<std::int64_t> gap_ns(200'000, 80'000'000);
  replay::StatsBuilder builder(false);
  for (int e = 0; e < 5000; ++e) {
    replay::ExchangeMetrics m;
    m.streamed = true;
    m.actual_send_ns = m.intended_send_ns = e * 1'000'000LL;
    m.first_token_ns = 5'000'000;
    m.end_ns = 900'000'000;
    m.output_tokens = {257, true};
    for (int g = 0; g < 256; ++g) {
      auto gap = gap_ns(random);
      m.token_gaps_ns.push_back(gap);
      gaps_ms.push_back(static_cast<double>(gap) / 1e6);
    }
    builder.add(std::move(m));
  }
  auto stats = std::move(builder).finish();
  CHECK(stats.completed == 5000);
  CHECK(stats.itl.relative_error == Distribution::kRelativeError);
  check_against_exact(stats.itl, gaps_ms);
  CHECK(stats.ttft.relative_error == 0);  // 5,000 samples: exact
  CHECK(stats.ttft.count == 5000);

  // Every report says which figures came from the histogram, and how close they are.
  auto json = boost::json::parse(report::render_stats_json(stats)).as_object();
  CHECK(json.at("itl_ms").as_object().at("relative_error").as_double() == Distribution::kRelativeError);
  CHECK_FALSE(json.at("ttft_ms").as_object().contains("relative_error"));
  auto text = report::render_stats_text(stats);
  CHECK(text.find("(n=1280000, percentiles within 0.00305 %)") != std::string::npos);
  CHECK(text.find("(n=5000)") != std::string::npos);
  CHECK(report::render_stats_markdown(stats).find("| 1280000, percentiles within 0.00305 % |") !=
        std::string::npos);
}
