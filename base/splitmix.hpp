// splitmix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number generators", 2014),
// written once: the finaliser is the cheap, well-spread 64-bit hash step the simulator, session
// sampling and trace digests use, and next() the seed sequence of the replay's arrival sampler and
// of synthetic prompts. Everything it feeds must be the same on every machine and in every version
// (sampled sessions, digests that merge compares, prompt text), so neither may change.
#pragma once

#include <cstdint>

namespace retrace {

inline constexpr std::uint64_t kSplitmixGamma = 0x9e3779b97f4a7c15ull;  // 2^64 / golden ratio

constexpr std::uint64_t splitmix64_finalise(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// The next value of the sequence that starts at `state` (which it advances).
constexpr std::uint64_t splitmix64_next(std::uint64_t& state) {
  return splitmix64_finalise(state += kSplitmixGamma);
}

}  // namespace retrace
