#include "dataset/synthetic_prompt.hpp"

#include <array>
#include <cmath>
#include <cstdlib>

#include "base/splitmix.hpp"

namespace retrace {

namespace {

// 256 short common words, each a single token after a space in GPT-2/Llama style BPE vocabularies
// and in retrace serve's vocabulary (sim/words.cpp lists the same words first).
constexpr std::array<std::string_view, 256> kWords = {
    "the", "of", "and", "to", "in", "is", "it", "you", "that", "he", "was", "for", "on", "are",
    "with", "as", "his", "they", "be", "at", "one", "have", "this", "from", "or", "had", "by",
    "not", "word", "but", "what", "some", "we", "can", "out", "other", "were", "all", "there",
    "when", "up", "use", "your", "how", "said", "an", "each", "she", "which", "do", "their",
    "time", "if", "will", "way", "about", "many", "then", "them", "write", "would", "like", "so",
    "these", "her", "long", "make", "thing", "see", "him", "two", "has", "look", "more", "day",
    "could", "go", "come", "did", "number", "sound", "no", "most", "people", "my", "over", "know",
    "water", "than", "call", "first", "who", "may", "down", "side", "been", "now", "find", "any",
    "new", "work", "part", "take", "get", "place", "made", "live", "where", "after", "back",
    "little", "only", "round", "man", "year", "came", "show", "every", "good", "me", "give", "our",
    "under", "name", "very", "just", "form", "great", "think", "say", "help", "low", "line",
    "differ", "turn", "cause", "much", "mean", "before", "move", "right", "boy", "old", "too",
    "same", "tell", "does", "set", "three", "want", "air", "well", "also", "play", "small", "end",
    "put", "home", "read", "hand", "port", "large", "spell", "add", "even", "land", "here", "must",
    "big", "high", "such", "follow", "act", "why", "ask", "men", "change", "went", "light", "kind",
    "off", "need", "house", "try", "us", "again", "animal", "point", "mother", "world", "near",
    "build", "self", "earth", "father", "head", "stand", "own", "page", "should", "found",
    "answer", "school", "grow", "study", "still", "learn", "plant", "cover", "food", "sun", "four",
    "state", "keep", "eye", "never", "last", "let", "city", "tree", "cross", "farm", "hard",
    "start", "might", "story", "saw", "far", "sea", "draw", "left", "late", "run", "while",
    "press", "close", "night", "real", "life", "few", "north", "open", "seem", "next", "white",
    "begin", "got", "walk", "ease", "paper", "group", "always", "music", "those", "both", "mark"};

// SplitMix64: a fixed, well-mixed sequence per seed (the text must not change between versions).
std::uint64_t mix(std::uint64_t& state) { return splitmix64_next(state); }

// Hash ids and row seeds live in two namespaces, so a row's own blocks never equal an id's.
std::uint64_t block_seed(const std::vector<std::uint64_t>& hash_ids, std::size_t block,
                         std::uint64_t row_seed) {
  if (block < hash_ids.size()) return hash_ids[block] << 1;
  return ((row_seed * 0x100000001b3ull + block) << 1) | 1;
}

constexpr int kMaxCorrections = 8;

}  // namespace

PromptSynthesizer::PromptSynthesizer(TokenCounter count_tokens)
    : count_tokens_(std::move(count_tokens)) {}

void PromptSynthesizer::append_words(std::int64_t words, const std::vector<std::uint64_t>& hash_ids,
                                     std::int64_t block_tokens, std::uint64_t row_seed) {
  text_.clear();
  std::size_t block = 0;
  while (words > 0) {
    std::uint64_t state = block_seed(hash_ids, block, row_seed);
    std::uint64_t bits = 0;
    for (std::int64_t k = 0; k < block_tokens && words > 0; ++k, --words) {
      if (k % 8 == 0) bits = mix(state);  // eight 8-bit word picks per 64-bit draw
      if (!text_.empty()) text_ += ' ';
      text_ += kWords[bits & 0xff];
      bits >>= 8;
    }
    ++block;
  }
}

std::string_view PromptSynthesizer::build(const std::vector<std::uint64_t>& hash_ids,
                                          std::int64_t block_tokens, std::int64_t tokens,
                                          std::uint64_t row_seed) {
  if (block_tokens <= 0) block_tokens = 512;
  std::int64_t wanted = std::max<std::int64_t>(tokens, 1);
  std::int64_t words = wanted;
  append_words(words, hash_ids, block_tokens, row_seed);
  if (!count_tokens_) return text_;

  // Words are one token each in most vocabularies, so this usually ends at once; where words
  // merge or split, step the length of the last block by the miss until it is exact.
  std::int64_t best_words = words;
  std::int64_t best_miss = -1;
  for (int attempt = 0; attempt < kMaxCorrections; ++attempt) {
    std::int64_t miss = count_tokens_(text_) - wanted;
    if (best_miss < 0 || std::abs(miss) < best_miss) {
      best_miss = std::abs(miss);
      best_words = words;
    }
    if (miss == 0) return text_;
    std::int64_t next = std::max<std::int64_t>(words - miss, 1);
    if (next == words) break;
    words = next;
    append_words(words, hash_ids, block_tokens, row_seed);
  }
  if (words != best_words) append_words(best_words, hash_ids, block_tokens, row_seed);
  ++inexact_;
  worst_miss_ = std::max(worst_miss_, best_miss);
  return text_;
}

std::int64_t approximate_tokens(std::string_view text) {
  std::int64_t words = 0;
  bool in_word = false;
  for (char c : text) {
    bool space = c == ' ' || c == '\n' || c == '\t' || c == '\r';
    if (!space && !in_word) ++words;
    in_word = !space;
  }
  return std::max<std::int64_t>(1, std::llround(static_cast<double>(words) / 0.75));
}

}  // namespace retrace
