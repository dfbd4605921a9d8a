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
  // The keys ping-pong between `keys` and `values` itself (a key's bits held in a double's place,
  // never read as a number), so the sort holds n keys beside the samples, not 2n.
  std::vector<std::uint64_t> keys(n);
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
  bool in_values = false;  // where the keys are now
  for (int pass = 0; pass < kPasses; ++pass) {
    auto& count = counts[pass];
    // Every key has this digit: nothing to move. (keys[0] is a key in either place: `keys` keeps
    // a permutation of them all after a pass that moved them to `values`.)
    if (count[digit(keys[0], pass)] == n) continue;
    std::size_t start = 0;
    for (auto& c : count) start += std::exchange(c, start);  // each bucket's first position
    if (in_values) {
      for (double held : values) {
        auto key = std::bit_cast<std::uint64_t>(held);
        keys[count[digit(key, pass)]++] = key;
      }
    } else {
      for (auto key : keys) values[count[digit(key, pass)]++] = std::bit_cast<double>(key);
    }
    in_values = !in_values;
  }
  for (std::size_t i = 0; i < n; ++i)
    values[i] = std::bit_cast<double>(bits_of(in_values ? std::bit_cast<std::uint64_t>(values[i]) : keys[i]));
}

}  // namespace retrace::metrics
