// What sorting a run's samples costs: metrics::sort_ascending (metrics/ascending.hpp, what
// percentiles() sorts with) against std::sort, on latency-like samples (gaps of whole nanoseconds
// in milliseconds, log-normal around 10 ms, some equal), and percentiles() as a whole. CPU a
// sample, the two alternated ROUNDS times on the same samples (each first in half the rounds); medians. Pin it on a shared machine.
//
// Usage: percentiles_bench [ROUNDS (default 9)]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <random>
#include <vector>

#include "metrics/ascending.hpp"
#include "metrics/distribution.hpp"

namespace {

double cpu_now() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

std::vector<double> samples(std::size_t n) {
  std::mt19937_64 random(7);
  std::lognormal_distribution<double> ns(std::log(1e7), 1.0);
  std::vector<double> values(n);
  for (auto& v : values) v = static_cast<double>(static_cast<std::int64_t>(ns(random))) / 1e6;
  return values;
}

template <class Sort>
double ns_a_sample(const std::vector<double>& input, Sort sort) {
  auto copy = input;
  double start = cpu_now();
  sort(copy);
  return (cpu_now() - start) * 1e9 / static_cast<double>(input.size());
}

// std::sort as percentiles() called it before: in a function of its own, not inlined into the
// timing loop (inlined into a lambda there, GCC 12 gave a sort 2-3x slower at 4,000-10^6 samples).
[[gnu::noinline]] void sort_as_before(std::vector<double>& values) { std::sort(values.begin(), values.end()); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = argc > 1 ? std::atoi(argv[1]) : 9;
  std::printf("%10s %14s %14s %8s %18s\n", "samples", "std::sort ns", "radix ns", "ratio", "percentiles() ns");
  for (std::size_t n : {1000u, 4000u, 8192u, 10000u, 40000u, 100000u, 1000000u}) {
    auto input = samples(n);
    std::vector<double> before, after, whole;
    for (int r = 0; r < rounds; ++r) {
      auto std_sort = [&] { before.push_back(ns_a_sample(input, [](auto& v) { sort_as_before(v); })); };
      auto radix = [&] { after.push_back(ns_a_sample(input, [](auto& v) { retrace::metrics::sort_ascending(v); })); };
      if (r % 2) { radix(); std_sort(); } else { std_sort(); radix(); }  // neither always first
      whole.push_back(ns_a_sample(input, [](auto& v) { (void)retrace::metrics::percentiles(v); }));
    }
    std::printf("%10zu %14.2f %14.2f %8.3f %18.2f\n", n, median(before), median(after),
                median(after) / median(before), median(whole));
  }
}
