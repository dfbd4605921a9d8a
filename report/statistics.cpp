#include "report/statistics.hpp"

#include <algorithm>
#include <cmath>

namespace retrace::report {

namespace {

// P(X <= k) for X ~ Binomial(n, p), summed in log space so large n does not underflow.
double binomial_cdf(std::size_t k, std::size_t n, double p) {
  if (p <= 0) return 1;
  if (p >= 1) return k >= n ? 1 : 0;
  double log_p = std::log(p), log_q = std::log1p(-p);
  double sum = 0;
  for (std::size_t i = 0; i <= k; ++i) {
    double log_term = std::lgamma(double(n) + 1) - std::lgamma(double(i) + 1) -
                      std::lgamma(double(n - i) + 1) + double(i) * log_p + double(n - i) * log_q;
    sum += std::exp(log_term);
  }
  return std::min(sum, 1.0);
}

}  // namespace

std::optional<double> clopper_pearson_upper(std::size_t k, std::size_t n, double confidence) {
  if (n == 0) return std::nullopt;
  if (k >= n) return 1.0;
  // The CDF falls monotonically in p; bisect for CDF(k; n, p) = 1 − confidence.
  double alpha = 1 - confidence, low = double(k) / double(n), high = 1;
  for (int i = 0; i < 200 && high - low > 1e-12; ++i) {
    double middle = (low + high) / 2;
    (binomial_cdf(k, n, middle) > alpha ? low : high) = middle;
  }
  return high;
}

double student_t_95(std::size_t degrees) {
  static constexpr double kTable[] = {0,      12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365,
                                      2.306,  2.262,  2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
                                      2.120,  2.110,  2.101, 2.093, 2.086, 2.080, 2.074, 2.069,
                                      2.064,  2.060,  2.056, 2.052, 2.048, 2.045, 2.042};
  constexpr std::size_t kRows = sizeof kTable / sizeof kTable[0];
  if (degrees == 0) return 0;
  if (degrees < kRows) return kTable[degrees];
  // Beyond the table the Cornish–Fisher expansion around z = 1.96 is within 1e-3.
  double z = 1.959964, df = double(degrees);
  return z + (z * z * z + z) / (4 * df) +
         (5 * std::pow(z, 5) + 16 * z * z * z + 3 * z) / (96 * df * df);
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

}  // namespace retrace::report
