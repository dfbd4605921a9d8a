// Statistics that say what a result bounds: a confidence bound on a difference rate, and a
// confidence interval for a mean across repeats. Pure functions; no I/O. The distributions are
// Boost.Math's (header-only), not sums and tables of our own.
//
// Why these two:
//   * "0 of 60 outputs differed" does not show the rate is zero. The one-sided 95 % Clopper–Pearson
//     upper bound is the largest per-request rate p for which seeing k or fewer differences in n
//     would still happen 5 % of the time: exact (no normal approximation, which fails at k = 0),
//     and about 3/n when k = 0 (the "rule of three").
//   * Throughput across a handful of repeats: mean ± t(0.975, n−1)·s/√n, Student's t because the
//     standard deviation is itself estimated from those few repeats.
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

namespace retrace::metrics {

// One-sided upper confidence bound (default 95 %) on a binomial rate after k successes in n
// trials; 1 when k == n, nullopt when n == 0.
std::optional<double> clopper_pearson_upper(std::size_t k, std::size_t n, double confidence = 0.95);
// The matching one-sided lower bound: 0 when k == 0, nullopt when n == 0.
std::optional<double> clopper_pearson_lower(std::size_t k, std::size_t n, double confidence = 0.95);

// Two-sided interval (default 95 %) on a rate: Wilson's score interval, and Newcombe's hybrid
// score interval for a difference of two rates p1 - p2 built from the two Wilson intervals
// (Newcombe 1998, method 10): good coverage at small n and at rates of 0 or 1, where the normal
// approximation fails. `shadow` bounds the candidate's excess over the control with it.
struct Interval {
  double estimate = 0, low = 0, high = 0;
};
std::optional<Interval> wilson_interval(std::size_t k, std::size_t n, double confidence = 0.95);
// nullopt when either n is 0.
std::optional<Interval> newcombe_difference(std::size_t k1, std::size_t n1, std::size_t k2, std::size_t n2,
                                            double confidence = 0.95);

// Two-sided Student t quantile t(1 − alpha/2, degrees) for a 95 % interval (alpha = 0.05).
double student_t_95(std::size_t degrees);

// A set of samples (one per repeat): mean, sample standard deviation, min, max, spread, and the
// 95 % confidence interval of the mean (absent with fewer than two samples).
struct Spread {
  std::size_t count = 0;
  double mean = 0, min = 0, max = 0;
  double stddev = 0;          // sample standard deviation (n − 1); 0 for one sample
  double spread_percent = 0;  // (max − min) / mean × 100; 0 for one sample or a zero mean
  std::optional<double> ci_low, ci_high;
};
Spread spread_of(const std::vector<double>& samples);

}  // namespace retrace::metrics

namespace retrace::report {  // the names report has always had
using metrics::clopper_pearson_lower;
using metrics::clopper_pearson_upper;
using metrics::Spread;
using metrics::spread_of;
using metrics::student_t_95;
}  // namespace retrace::report
