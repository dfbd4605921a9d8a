// Doubles sorted ascending by an LSD radix sort of their bit patterns: see metrics/ascending.hpp.
#include "metrics/ascending.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <utility>

namespace retrace::metrics {

namespace {

constexpr int kDigitBits = 11;
constexpr int kPasses = (64 + kDigitBits - 1) / kDigitBits;  // 6
constexpr std::size_t kBuckets = std::size_t{1} << kDigitBits;
constexpr std::uint64_t kMask = kBuckets - 1;
constexpr std::uint64_t kSign = std::uint64_t{1} << 63;

// The key whose unsigned order is the doubles' order (for all but NaN), and back.
std::uint64_t key_of(std::uint64_t bits) { return bits & kSign ? ~bits : bits | kSign; }
std::uint64_t bits_of(std::uint64_t key) { return key & kSign ? key & ~kSign : ~key; }

std::size_t digit(std::uint64_t key, int pass) { return (key >> (pass * kDigitBits)) & kMask; }

}  // namespace

void sort_ascending(std::vector<double>& values) {
  const std::size_t n = values.size();
  if (n < kRadixFrom) {
    std::sort(values.begin(), values.end());
    return;
  }
  std::vector<std::uint64_t> keys(n), spare(n);
  std::vector<std::array<std::size_t, kBuckets>> counts(kPasses);  // zeroed
  for (std::size_t i = 0; i < n; ++i) {
    double value = values[i];
    if (value != value) {  // NaN: no order to keep
      std::sort(values.begin(), values.end());
      return;
    }
    auto key = key_of(std::bit_cast<std::uint64_t>(value));
    keys[i] = key;
    for (int pass = 0; pass < kPasses; ++pass) ++counts[pass][digit(key, pass)];
  }
  for (int pass = 0; pass < kPasses; ++pass) {
    auto& count = counts[pass];
    if (count[digit(keys[0], pass)] == n) continue;  // every key has this digit: nothing to move
    std::size_t start = 0;
    for (auto& c : count) start += std::exchange(c, start);  // each bucket's first position
    for (std::size_t i = 0; i < n; ++i) spare[count[digit(keys[i], pass)]++] = keys[i];
    keys.swap(spare);
  }
  for (std::size_t i = 0; i < n; ++i) values[i] = std::bit_cast<double>(bits_of(keys[i]));
}

}  // namespace retrace::metrics
