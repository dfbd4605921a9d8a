// The prefix cache of `retrace serve`, as vLLM's automatic prefix caching keeps one: prompts are
// cut into blocks of kBlockTokens tokens, each full block is known by a hash of everything up to
// its end (and of the request's cache_salt, so requests with different salts never share), and a
// new request reuses the longest run of known blocks from its start. At least the prompt's last
// token is always computed, as vLLM does, so a prompt never counts as wholly cached.
//
// Only the reported cached_tokens and --cache-variance (a hit changes the reduction order:
// sim/scheduler.cpp) depend on it; the toy model's outputs do not read the cache.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <unordered_set>

#include "sim/engine.hpp"

namespace retrace::sim {

class PrefixCache {
 public:
  static constexpr std::size_t kBlockTokens = 16;
  // Blocks kept; when full the cache is emptied (a crude eviction, enough for a simulator).
  static constexpr std::size_t kMaxBlocks = 1u << 20;

  // The tokens of `prompt` already cached under `salt`; then caches all of its full blocks.
  std::size_t lookup_and_insert(std::string_view salt, std::span<const TokenId> prompt);
  std::size_t blocks() const { return blocks_.size(); }

 private:
  std::unordered_set<std::uint64_t> blocks_;
};

}  // namespace retrace::sim
