#include "sim/prefix_cache.hpp"

#include "base/splitmix.hpp"

namespace retrace::sim {

std::size_t PrefixCache::lookup_and_insert(std::string_view salt, std::span<const TokenId> prompt) {
  std::uint64_t hash = 0x84222325cbf29ce4ull;
  for (unsigned char c : salt) hash = splitmix64_finalise(hash ^ c);
  if (blocks_.size() + prompt.size() / kBlockTokens > kMaxBlocks) blocks_.clear();
  std::size_t cached = 0;
  bool hitting = true;
  // Blocks that end before the last token: that one is always computed.
  std::size_t usable = prompt.empty() ? 0 : (prompt.size() - 1) / kBlockTokens;
  for (std::size_t block = 0; block < prompt.size() / kBlockTokens; ++block) {
    for (std::size_t i = block * kBlockTokens; i < (block + 1) * kBlockTokens; ++i)
      hash = splitmix64_finalise(hash ^ std::uint64_t(std::uint32_t(prompt[i])));
    bool known = !blocks_.insert(hash).second;
    if (hitting && known && block < usable)
      cached += kBlockTokens;
    else
      hitting = false;
  }
  return cached;
}

}  // namespace retrace::sim
