// Open-loop arrival processes (replay/replay.hpp, Arrivals): constant, Poisson and gamma gaps drawn
// from the project's own generator, so that a seed gives the same schedule on every machine.
#include <cmath>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/time.hpp"
#include "replay/replay.hpp"

namespace retrace::replay {

// xoshiro256** seeded by splitmix64: the same stream on every platform.
class Random {
 public:
  explicit Random(std::uint64_t seed) {
    for (auto& word : state_) {
      seed += 0x9e3779b97f4a7c15ull;
      std::uint64_t z = seed;
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
      word = z ^ (z >> 31);
    }
  }
  std::uint64_t next() {
    auto rotl = [](std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); };
    std::uint64_t result = rotl(state_[1] * 5, 7) * 9;
    std::uint64_t t = state_[1] << 17;
    state_[2] ^= state_[0];
    state_[3] ^= state_[1];
    state_[1] ^= state_[2];
    state_[0] ^= state_[3];
    state_[2] ^= t;
    state_[3] = rotl(state_[3], 45);
    return result;
  }
  // (0, 1]: never 0, so log() is finite.
  double uniform() { return (static_cast<double>(next() >> 11) + 1.0) * 0x1.0p-53; }
  double exponential() { return -std::log(uniform()); }
  double normal() {
    // Box-Muller; one of the pair is enough here.
    double u1 = uniform(), u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
  }
  // Marsaglia & Tsang; shape < 1 through the boost x * U^(1/shape). Mean = shape.
  double gamma(double shape) {
    if (shape < 1) return gamma(shape + 1) * std::pow(uniform(), 1.0 / shape);
    double d = shape - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
    while (true) {
      double x = normal(), v = 1 + c * x;
      if (v <= 0) continue;
      v = v * v * v;
      double u = uniform();
      if (std::log(u) < 0.5 * x * x + d - d * v + d * std::log(v)) return d * v;
    }
  }

 private:
  std::uint64_t state_[4];
};

std::string_view to_string(ScheduleKind kind) { return enum_name(kind, "?"); }

std::string_view to_string(Arrival arrival) { return enum_name(arrival, "?"); }

std::optional<Arrival> arrival_from_string(std::string_view text) {
  return enum_from_name<Arrival>(text);
}

Arrivals::Arrivals(const Schedule& schedule, std::uint64_t seed)
    : schedule_(schedule), random_(std::make_unique<Random>(seed)) {
  if (!(schedule.rate > 0)) throw std::invalid_argument("--rate must be above 0");
}
Arrivals::~Arrivals() = default;

std::int64_t Arrivals::next() {
  // An offset past what int64 nanoseconds hold (292 years) would overflow; no real schedule
  // is that long, so a rate that low is a mistake worth naming.
  if (!(at_s_ < std::chrono::duration<double>(kMaxScheduleSpan).count()))
    throw std::invalid_argument("--rate " + std::to_string(schedule_.rate) +
                                " would schedule request " + std::to_string(drawn_ + 1) +
                                " more than " + std::to_string(kMaxScheduleYears) +
                                " years after the start; give a higher rate");
  auto offset = static_cast<std::int64_t>(std::llround(at_s_ * 1e9));
  double mean_gap_s = 1.0 / schedule_.rate;
  switch (schedule_.arrival) {
    case Arrival::constant: at_s_ += mean_gap_s; break;
    case Arrival::poisson: at_s_ += mean_gap_s * random_->exponential(); break;
    case Arrival::gamma: {
      double shape = schedule_.burstiness > 0 ? schedule_.burstiness : 1;
      at_s_ += random_->gamma(shape) * mean_gap_s / shape;
      break;
    }
  }
  ++drawn_;
  return offset;
}

std::vector<std::int64_t> arrival_offsets_ns(std::size_t count, const Schedule& schedule,
                                             std::uint64_t seed) {
  Arrivals arrivals(schedule, seed);
  std::vector<std::int64_t> offsets;
  offsets.reserve(count);
  for (std::size_t i = 0; i < count; ++i) offsets.push_back(arrivals.next());
  return offsets;
}

}  // namespace retrace::replay
