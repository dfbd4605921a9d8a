// metrics/ascending (the radix sort percentiles() sorts with) against std::sort, and the run's
// figures StatsBuilder gathers from an exchange's tokens straight against add(summarize(...)):
// both differential, value for value, over generated inputs.
#include <catch2/catch.hpp>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "metrics/ascending.hpp"
#include "metrics/distribution.hpp"
#include "metrics/stats.hpp"

using namespace retrace;
using namespace retrace::metrics;

namespace {

// Samples of one kind: latencies, ties, zeros, negatives, the doubles' far ends, any bits, one
// exponent, whole numbers.
std::vector<double> generated(std::size_t n, int kind, std::uint64_t seed) {
  std::mt19937_64 random(seed);
  std::lognormal_distribution<double> latency(0.0, 2.0);
  const double far[] = {std::numeric_limits<double>::denorm_min(), std::numeric_limits<double>::min(),
                        std::numeric_limits<double>::max(), std::numeric_limits<double>::infinity(),
                        1e-300, 1e300, 0.0};
  std::vector<double> values(n);
  for (auto& v : values) {
    switch (kind) {
      case 0: v = latency(random); break;                                        // latencies in ms
      case 1: v = static_cast<double>(random() % 7) / 4; break;                  // ties, zeros
      case 2: v = latency(random) * (random() % 3 == 0 ? -1 : 1); break;         // slips: negatives
      case 3: v = far[random() % 7] * (random() % 2 ? -1 : 1); break;             // the far ends
      case 4: v = std::bit_cast<double>(random() & ~(std::uint64_t{0x7ff} << 52)) +
                  static_cast<double>(random() % 1000); break;                   // any bits but NaN
      // One exponent (the sign and exponent's digit is the same: an odd number of passes moves
      // the keys, which end in the samples' own storage), and whole numbers (low digits all 0).
      case 5: v = 1 + static_cast<double>(random() >> 12) / 0x1p52; break;
      default: v = static_cast<double>(random() % 100'000); break;
    }
    if (v == 0) v = 0.0;  // no -0.0 here (see the case of zeros below)
  }
  return values;
}

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](double x, double y) {
           return std::bit_cast<std::uint64_t>(x) == std::bit_cast<std::uint64_t>(y);
         });
}

}  // namespace

TEST_CASE("sort_ascending gives std::sort's order bit for bit on every size and kind of samples") {
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{2}, std::size_t{100}, kRadixFrom - 1,
                        kRadixFrom, kRadixFrom + 1, std::size_t{50'000}, std::size_t{1'000'000}}) {
    for (int kind = 0; kind < 7; ++kind) {
      if (n == 1'000'000 && kind != 0) continue;  // one production-size set: a run's million gaps
      INFO(n << " samples of kind " << kind);
      auto values = generated(n, kind, n * 7 + static_cast<std::uint64_t>(kind));
      auto expected = values;
      std::sort(expected.begin(), expected.end());
      sort_ascending(values);
      CHECK(same_bits(values, expected));
    }
  }
}

TEST_CASE("sort_ascending keeps zeros of either sign equal to std::sort's and sends NaN to std::sort") {
  auto values = generated(kRadixFrom * 2, 1, 3);
  for (std::size_t i = 0; i < values.size(); i += 5) values[i] = i % 10 ? -0.0 : 0.0;
  auto expected = values;
  std::sort(expected.begin(), expected.end());
  sort_ascending(values);
  CHECK(values == expected);  // == : a -0.0 equals a +0.0
  CHECK(std::is_sorted(values.begin(), values.end()));
  auto with_nan = generated(kRadixFrom * 2, 0, 4);
  with_nan[17] = std::numeric_limits<double>::quiet_NaN();
  auto copy = with_nan;
  std::sort(copy.begin(), copy.end());
  sort_ascending(with_nan);
  CHECK(same_bits(with_nan, copy));
}

TEST_CASE("percentiles from the radix sort equal those from std::sort up to and past the histogram switch") {
  for (std::size_t n : {std::size_t{0}, std::size_t{3}, kRadixFrom + 5, std::size_t{200'000}}) {
    INFO(n << " samples");
    auto values = generated(n, 2, n);
    auto sorted = values;
    std::sort(sorted.begin(), sorted.end());
    auto p = percentiles(values);
    CHECK(same_bits(p.sorted, sorted));
    if (n) CHECK(p.p99 == sorted[static_cast<std::size_t>(std::ceil(0.99 * double(n))) - 1]);
    // The same samples through a Distribution that switches to its histogram half way.
    Distribution exact, counting(n / 2);
    for (double v : sorted) { exact.add(v); counting.add(v); }
    auto e = std::move(exact).percentiles();
    CHECK(same_bits(e.sorted, sorted));
    CHECK(e.mean == p.mean);
    CHECK(e.stddev == p.stddev);
    if (n > 1) CHECK(!counting.exact());
  }
}

namespace {

// An exchange whose choice 0 comes in `parts` parts (and a choice 1 after), token offsets drawn
// with repeats (gaps of 0, which ITL leaves out) and out of order across parts.
Exchange exchange_of(std::mt19937_64& random, int parts, int tokens) {
  Exchange e;
  e.request = {"POST", "/v1/completions", {}, "{}"};
  e.response.status = 200;
  e.response.streamed = true;
  e.actual_send_ns = e.intended_send_ns = static_cast<std::int64_t>(random() % 1'000'000'000);
  std::int64_t last = 0;
  for (int index = 0; index < 2; ++index)
    for (int part = 0; part < (index == 0 ? parts : 1); ++part) {
      Choice choice;
      choice.index = static_cast<std::uint32_t>(index);
      choice.part = part == 0 ? Part::content : Part::reasoning;
      std::int64_t at = static_cast<std::int64_t>(random() % 1'000'000);
      for (int t = 0; t < tokens; ++t) {
        Token token;
        token.bytes = "x";
        if (random() % 4) at += static_cast<std::int64_t>(random() % 5'000'000);  // else a repeat
        token.offset_ns = at;
        choice.tokens.push_back(token);
        last = std::max(last, at);
      }
      e.choices.push_back(std::move(choice));
    }
  e.end_ns = last + 1;
  return e;
}

// What summarize() listed before it read one choice in place: choice 0's offsets, sorted when the
// exchange has more than one choice, their positive differences.
std::vector<std::int64_t> reference_gaps(const Exchange& e) {
  std::vector<std::int64_t> offsets, gaps;
  for (const auto& choice : e.choices) {
    if (choice.index != e.choices.front().index) break;
    for (const auto& token : choice.tokens) offsets.push_back(token.offset_ns);
  }
  if (e.choices.size() > 1) std::sort(offsets.begin(), offsets.end());
  for (std::size_t i = 1; i < offsets.size(); ++i)
    if (offsets[i] > offsets[i - 1]) gaps.push_back(offsets[i] - offsets[i - 1]);
  return gaps;
}

}  // namespace

TEST_CASE("a builder adding exchanges gives the figures of adding their summaries on several choices and parts") {
  std::mt19937_64 random(11);
  StatsBuilder straight(false), summarized(false);
  std::size_t gaps = 0;
  for (int i = 0; i < 400; ++i) {
    auto exchange = exchange_of(random, 1 + i % 3, static_cast<int>(random() % 300));
    if (i % 5 == 0) exchange.choices.resize(std::min<std::size_t>(exchange.choices.size(), 1));
    auto metrics = summarize(exchange);
    CHECK(metrics.token_gaps_ns == reference_gaps(exchange));
    gaps += metrics.token_gaps_ns.size();
    straight.add(exchange, 0);
    summarized.add(std::move(metrics), 0);
  }
  REQUIRE(gaps > 10'000);
  auto a = std::move(straight).finish(), b = std::move(summarized).finish();
  CHECK(a.itl.count == gaps);
  for (auto [x, y] : {std::pair{&a.itl, &b.itl}, {&a.ttft, &b.ttft}, {&a.tpot, &b.tpot}, {&a.e2e, &b.e2e}}) {
    CHECK(same_bits(x->sorted, y->sorted));
    CHECK(x->mean == y->mean);
    CHECK(x->stddev == y->stddev);
    CHECK(x->p99 == y->p99);
  }
  CHECK(a.output_tokens == b.output_tokens);
  CHECK(a.peak_in_flight == b.peak_in_flight);
}
