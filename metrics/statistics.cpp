#include "metrics/statistics.hpp"

#include <algorithm>
#include <cmath>

#include <boost/math/distributions/binomial.hpp>
#include <boost/math/distributions/normal.hpp>
#include <boost/math/distributions/students_t.hpp>

namespace retrace::metrics {

std::optional<double> clopper_pearson_upper(std::size_t k, std::size_t n, double confidence) {
  if (n == 0) return std::nullopt;
  if (k >= n) return 1.0;
  // One-sided: the whole 1 - confidence lies above the bound.
  return boost::math::binomial_distribution<>::find_upper_bound_on_p(
      double(n), double(k), 1 - confidence, boost::math::binomial_distribution<>::clopper_pearson_exact_interval);
}

std::optional<double> clopper_pearson_lower(std::size_t k, std::size_t n, double confidence) {
  if (n == 0) return std::nullopt;
  if (k == 0) return 0.0;
  return boost::math::binomial_distribution<>::find_lower_bound_on_p(
      double(n), double(k), 1 - confidence, boost::math::binomial_distribution<>::clopper_pearson_exact_interval);
}

std::optional<Interval> wilson_interval(std::size_t k, std::size_t n, double confidence) {
  if (n == 0) return std::nullopt;
  k = std::min(k, n);
  const double z = boost::math::quantile(boost::math::normal(), 1 - (1 - confidence) / 2);
  const double p = double(k) / double(n), z2n = z * z / double(n);
  const double centre = (p + z2n / 2) / (1 + z2n);
  const double half = z * std::sqrt(p * (1 - p) / double(n) + z2n / (4 * double(n))) / (1 + z2n);
  return Interval{p, std::max(0.0, centre - half), std::min(1.0, centre + half)};
}

std::optional<Interval> newcombe_difference(std::size_t k1, std::size_t n1, std::size_t k2, std::size_t n2,
                                            double confidence) {
  auto first = wilson_interval(k1, n1, confidence), second = wilson_interval(k2, n2, confidence);
  if (!first || !second) return std::nullopt;
  const double d = first->estimate - second->estimate;
  auto square = [](double x) { return x * x; };
  return Interval{d,
                  d - std::sqrt(square(first->estimate - first->low) + square(second->high - second->estimate)),
                  d + std::sqrt(square(first->high - first->estimate) + square(second->estimate - second->low))};
}

double student_t_95(std::size_t degrees) {
  if (degrees == 0) return 0;
  return boost::math::quantile(boost::math::complement(boost::math::students_t(double(degrees)), 0.025));
}

Spread spread_of(const std::vector<double>& samples) {
  Spread spread;
  spread.count = samples.size();
  if (samples.empty()) return spread;
  double sum = 0;
  spread.min = spread.max = samples.front();
  for (double sample : samples) {
    sum += sample;
    spread.min = std::min(spread.min, sample);
    spread.max = std::max(spread.max, sample);
  }
  double n = double(samples.size());
  spread.mean = sum / n;
  if (samples.size() < 2) return spread;
  if (spread.mean > 0) spread.spread_percent = (spread.max - spread.min) / spread.mean * 100.0;
  double squares = 0;
  for (double sample : samples) squares += (sample - spread.mean) * (sample - spread.mean);
  spread.stddev = std::sqrt(squares / (n - 1));
  double half = student_t_95(samples.size() - 1) * spread.stddev / std::sqrt(n);
  spread.ci_low = spread.mean - half;
  spread.ci_high = spread.mean + half;
  return spread;
}

}  // namespace retrace::metrics
