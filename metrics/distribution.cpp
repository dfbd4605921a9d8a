// Percentiles of one latency figure, exact up to a million samples, then from a histogram of
// bounded size: see metrics/distribution.hpp.
#include "metrics/distribution.hpp"

#include "metrics/ascending.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

namespace retrace::metrics {

namespace {

constexpr int kBits = Distribution::kSubBucketBits;
constexpr std::uint64_t kSub = std::uint64_t{1} << kBits;   // buckets per power of two
constexpr std::uint64_t kLinear = kSub << 1;                 // below: one bucket per microsecond

// The bucket of `us` microseconds: itself below kLinear; above, 2^kBits buckets per power of two,
// each 2^(e - kBits) wide for values in [2^e, 2^(e + 1)).
std::size_t bucket_of(std::uint64_t us) {
  if (us < kLinear) return us;
  int e = std::bit_width(us) - 1;
  int shift = e - kBits;
  return kLinear + static_cast<std::uint64_t>(e - kBits - 1) * kSub + ((us >> shift) - kSub);
}

// The middle of bucket `index`, in microseconds: within 2^-(kBits + 1) of any value in it.
double middle_of(std::size_t index) {
  if (index < kLinear) return static_cast<double>(index);
  auto k = index - kLinear;
  int shift = static_cast<int>(k / kSub) + 1;
  auto lower = (kSub + k % kSub) << shift;
  auto width = std::uint64_t{1} << shift;
  return static_cast<double>(lower) + static_cast<double>(width - 1) / 2;
}

double mean_of(const std::vector<double>& values) {
  double sum = 0;
  for (double v : values) sum += v;
  return sum / static_cast<double>(values.size());
}

double squared_deviations(const std::vector<double>& values, double mean) {
  double squares = 0;
  for (double v : values) squares += (v - mean) * (v - mean);
  return squares;
}

}  // namespace

double Percentiles::at(double percent) const {
  if (count == 0) return 0;
  return at_rank(static_cast<std::size_t>(std::ceil(percent / 100 * static_cast<double>(count))));
}

double Percentiles::at_rank(std::size_t rank) const {
  if (count == 0) return 0;
  rank = std::clamp<std::size_t>(rank, 1, count);
  if (!sorted.empty()) return sorted[rank - 1];
  if (rank == count) return max;  // the largest sample, kept exactly
  auto it = std::lower_bound(ranks.begin(), ranks.end(), rank,
                             [](const auto& bucket, std::size_t r) { return bucket.second < r; });
  return it == ranks.end() ? max : it->first;
}

Percentiles percentiles(std::vector<double>& values_ms) {
  Percentiles result;
  result.count = values_ms.size();
  if (values_ms.empty()) return result;
  sort_ascending(values_ms);
  result.max = values_ms.back();
  result.mean = mean_of(values_ms);
  if (values_ms.size() > 1)
    result.stddev = std::sqrt(squared_deviations(values_ms, result.mean) /
                              static_cast<double>(values_ms.size() - 1));
  result.sorted = std::move(values_ms);
  result.p50 = result.at(50);
  result.p90 = result.at(90);
  result.p99 = result.at(99);
  return result;
}

void Distribution::add(double ms) {
  if (count_ == 0 || ms > max_) max_ = ms;
  if (count_ == 0 || ms < min_) min_ = ms;
  ++count_;
  if (!counting_ && samples_.size() < exact_samples_) {
    samples_.push_back(ms);
    return;
  }
  if (!counting_) {  // one sample too many to keep: count the kept ones, and from now on
    counting_ = true;
    mean_ = mean_of(samples_);
    m2_ = squared_deviations(samples_, mean_);
    for (double v : samples_) count_in_histogram(v);
    std::vector<double>().swap(samples_);
  }
  // Welford's update, from the kept samples' mean and squares on (count_ includes this sample).
  double delta = ms - mean_;
  mean_ += delta / static_cast<double>(count_);
  m2_ += delta * (ms - mean_);
  count_in_histogram(ms);
}

void Distribution::count_in_histogram(double ms) {
  auto& buckets = ms < 0 ? negative_ : positive_;
  auto us = static_cast<std::uint64_t>(std::llround(std::fabs(ms) * 1000));
  auto index = bucket_of(us);
  if (index >= buckets.size()) buckets.resize(index + 1);
  ++buckets[index];
}

std::size_t Distribution::bytes() const {
  return samples_.capacity() * sizeof(double) +
         (positive_.capacity() + negative_.capacity()) * sizeof(std::uint64_t);
}

Percentiles Distribution::percentiles() && {
  if (!counting_) return metrics::percentiles(samples_);
  Percentiles result;
  result.count = count_;
  result.max = max_;
  result.mean = mean_;
  result.stddev = count_ > 1 ? std::sqrt(m2_ / static_cast<double>(count_ - 1)) : 0;
  result.relative_error = kRelativeError;
  // Ascending: the negative buckets from the largest magnitude, then the positive ones. A
  // bucket's value is its middle, kept within the exact smallest and largest samples.
  std::uint64_t below = 0;
  auto emit = [&](std::size_t index, std::uint64_t n, double sign) {
    below += n;
    double value = std::clamp(sign * middle_of(index) / 1000, min_, max_);
    result.ranks.emplace_back(value, below);
  };
  for (std::size_t i = negative_.size(); i-- > 0;)
    if (negative_[i]) emit(i, negative_[i], -1);
  for (std::size_t i = 0; i < positive_.size(); ++i)
    if (positive_[i]) emit(i, positive_[i], 1);
  result.p50 = result.at(50);
  result.p90 = result.at(90);
  result.p99 = result.at(99);
  return result;
}

}  // namespace retrace::metrics
