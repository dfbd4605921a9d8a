// The distribution of one latency figure over a run (TTFT, ITL, e2e, ...): its count, nearest-rank
// percentiles, max, mean and standard deviation, in bounded memory however many samples come.
//
// Up to `exact_samples` samples (a million by default: the TTFT of a million requests, the
// inter-token gaps of a few thousand long streams) every sample is kept and the percentiles are
// exact. Past that the samples are counted in a histogram instead (and the kept ones folded into
// it): a percentile is then its sample's value to the microsecond up to 32.768 ms and within
// 2^-15 (0.003 %) of it above, which the 3 decimals of milliseconds a report shows rarely see.
// max, mean and stddev stay exact. The histogram's buckets grow with the largest sample (≈ 0.6 MB
// for samples up to 100 ms, ≈ 3 MB up to a day), not with the number of samples: a replay of a
// million 256-token streams keeps a few MB for its ITL, not gigabytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace retrace::metrics {

struct Percentiles {
  std::size_t count = 0;
  double p50 = 0, p90 = 0, p99 = 0, max = 0, mean = 0;  // milliseconds
  double stddev = 0;  // sample standard deviation (n - 1); 0 below two samples
  // 0 when the percentiles are exact; else the histogram's bound on a percentile's relative error
  // (Distribution: to the microsecond up to 32.768 ms, within this fraction above).
  double relative_error = 0;
  // Nearest rank: the smallest sample with at least `percent` % of the samples at or below it;
  // 0 without samples. at(50) == p50.
  double at(double percent) const;
  // The sample of nearest rank `rank` (1-based, clamped to 1..count): the rank-th smallest exactly,
  // or its histogram bucket's value. What a chart reads to draw the distribution; 0 without samples.
  double at_rank(std::size_t rank) const;
  // What at() reads, so that a report can show any percentile it is asked for (--percentiles):
  // every sample, ascending (exact), or each non-empty histogram bucket's value, ascending, with
  // the number of samples at or below it.
  std::vector<double> sorted;
  std::vector<std::pair<double, std::uint64_t>> ranks;
};

// Exact nearest-rank percentiles over values in milliseconds (sorted in place, then kept).
Percentiles percentiles(std::vector<double>& values_ms);

class Distribution {
 public:
  static constexpr std::size_t kExactSamples = std::size_t{1} << 20;
  static constexpr int kSubBucketBits = 14;  // per power of two above 2^15 µs: 2^-15 relative error
  static constexpr double kRelativeError = 1.0 / (1 << (kSubBucketBits + 1));

  explicit Distribution(std::size_t exact_samples = kExactSamples) : exact_samples_(exact_samples) {}
  void add(double ms);
  std::size_t count() const { return count_; }
  bool exact() const { return !counting_; }
  // Bytes held for the samples (their vector's or the histogram's capacity).
  std::size_t bytes() const;
  Percentiles percentiles() &&;

 private:
  void count_in_histogram(double ms);

  std::size_t exact_samples_;
  std::size_t count_ = 0;
  bool counting_ = false;  // past exact_samples_: the histogram holds every sample
  std::vector<double> samples_;
  // Microseconds: bucket i of `positive_` (of `negative_`, for -value) by bucket_of().
  std::vector<std::uint64_t> positive_, negative_;
  double max_ = 0, min_ = 0;
  double mean_ = 0, m2_ = 0;  // Welford's running mean and sum of squared deviations
};

}  // namespace retrace::metrics

namespace retrace::replay {  // the names replay has always had
using metrics::Distribution;
using metrics::Percentiles;
using metrics::percentiles;
}  // namespace retrace::replay
