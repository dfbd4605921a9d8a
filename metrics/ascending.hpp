// Doubles sorted ascending, as std::sort with operator< sorts them, at less cost for the
// 10^4-10^6 samples a run's figures keep (metrics/distribution.cpp's percentiles).
//
// From kRadixFrom values on, an LSD radix sort of the values' bit patterns, each mapped to an
// unsigned key in the doubles' order (a positive value's sign bit set, a negative one's bits all
// flipped): 11 bits a pass, a pass skipped where every key has the same digit (the sign and
// exponent of latencies in one range), no comparison and so no mispredicted branch. The result is
// the same multiset in the same order as std::sort's, value for value; only among zeros may a
// -0.0 stand before a +0.0 where std::sort left them the other way (they compare equal). A NaN
// (which has no place in an order) sends the whole vector to std::sort, as before.
// Below kRadixFrom, std::sort: measured cheaper up to 4,000 samples (bench/percentiles_bench.cpp).
// Transient memory: one array of n 64-bit keys (they take turns with the samples' own storage).
#pragma once

#include <cstddef>
#include <vector>

namespace retrace::metrics {

inline constexpr std::size_t kRadixFrom = 8192;

void sort_ascending(std::vector<double>& values);

}  // namespace retrace::metrics
