// Unit tests of replay/'s arrival processes: constant, Poisson and gamma offsets, and the bound on them.
#include <catch2/catch.hpp>

#include <cmath>
#include <numeric>
#include <vector>

#include "replay/replay.hpp"

using namespace retrace;
using namespace retrace::replay;

TEST_CASE("constant arrivals are evenly spaced at 1/rate") {
  Schedule schedule;
  schedule.kind = ScheduleKind::rate;
  schedule.rate = 4;
  schedule.arrival = Arrival::constant;
  auto offsets = arrival_offsets_ns(5, schedule, 7);
  CHECK(offsets == std::vector<std::int64_t>{0, 250'000'000, 500'000'000, 750'000'000, 1'000'000'000});
}

TEST_CASE("a rate so low that offsets would overflow is refused instead of wrapping") {
  Schedule schedule;
  schedule.kind = ScheduleKind::rate;
  schedule.arrival = Arrival::constant;
  for (double rate : {1e-300, 1e-10}) {
    schedule.rate = rate;
    CHECK_THROWS_WITH(arrival_offsets_ns(3, schedule, 7),
                      Catch::Contains("more than 100 years after the start"));
  }
  schedule.rate = 1e-6;  // one request every 11.6 days still fits
  auto offsets = arrival_offsets_ns(3, schedule, 7);
  CHECK(offsets == std::vector<std::int64_t>{0, 1'000'000'000'000'000, 2'000'000'000'000'000});
}

TEST_CASE("poisson arrivals with a fixed seed are reproducible and have the rate's statistics") {
  Schedule schedule;
  schedule.kind = ScheduleKind::rate;
  schedule.rate = 50;
  schedule.arrival = Arrival::poisson;
  constexpr std::size_t n = 20000;
  auto offsets = arrival_offsets_ns(n, schedule, 42);
  CHECK(offsets == arrival_offsets_ns(n, schedule, 42));
  CHECK(offsets != arrival_offsets_ns(n, schedule, 43));
  std::vector<double> gaps;
  for (std::size_t i = 1; i < n; ++i) gaps.push_back(static_cast<double>(offsets[i] - offsets[i - 1]) / 1e9);
  double mean = std::accumulate(gaps.begin(), gaps.end(), 0.0) / static_cast<double>(gaps.size());
  double variance = 0;
  for (double g : gaps) variance += (g - mean) * (g - mean);
  variance /= static_cast<double>(gaps.size() - 1);
  // Exponential gaps: mean 1/rate = 20 ms, coefficient of variation 1. Bounds are ~6 standard
  // errors wide for n = 20000, so a correct sampler fails with negligible probability.
  CHECK(mean == Approx(0.02).epsilon(0.05));
  CHECK(std::sqrt(variance) / mean == Approx(1.0).epsilon(0.06));
  // Counts in one-second windows are Poisson(50): mean 50, variance 50.
  std::vector<int> counts(static_cast<std::size_t>(offsets.back() / 1'000'000'000) , 0);
  for (auto t : offsets) {
    auto window = static_cast<std::size_t>(t / 1'000'000'000);
    if (window < counts.size()) ++counts[window];
  }
  double count_mean = std::accumulate(counts.begin(), counts.end(), 0.0) / static_cast<double>(counts.size());
  double count_variance = 0;
  for (int c : counts) count_variance += (c - count_mean) * (c - count_mean);
  count_variance /= static_cast<double>(counts.size() - 1);
  CHECK(count_mean == Approx(50).epsilon(0.05));
  CHECK(count_variance / count_mean == Approx(1.0).epsilon(0.3));
}

TEST_CASE("gamma arrivals keep the mean rate and burstiness below 1 makes gaps more variable") {
  Schedule schedule;
  schedule.kind = ScheduleKind::rate;
  schedule.rate = 10;
  schedule.arrival = Arrival::gamma;
  auto coefficient_of_variation = [&](double shape, double& mean) {
    schedule.burstiness = shape;
    auto offsets = arrival_offsets_ns(20000, schedule, 9);
    std::vector<double> gaps;
    for (std::size_t i = 1; i < offsets.size(); ++i)
      gaps.push_back(static_cast<double>(offsets[i] - offsets[i - 1]));
    mean = std::accumulate(gaps.begin(), gaps.end(), 0.0) / static_cast<double>(gaps.size());
    double variance = 0;
    for (double g : gaps) variance += (g - mean) * (g - mean);
    variance /= static_cast<double>(gaps.size() - 1);
    return std::sqrt(variance) / mean;
  };
  double mean = 0;
  // Gamma(k): coefficient of variation 1/sqrt(k).
  CHECK(coefficient_of_variation(0.25, mean) == Approx(2.0).epsilon(0.1));
  CHECK(mean == Approx(1e8).epsilon(0.08));
  CHECK(coefficient_of_variation(4, mean) == Approx(0.5).epsilon(0.06));
  CHECK(mean == Approx(1e8).epsilon(0.03));
}
