// Prompt text of a given token length for traces that record only lengths (Mooncake, Bailian,
// Azure, BurstGPT).
//
// A prompt is a sequence of blocks of `block_tokens` tokens each; the last may be cut short. A
// block's text depends only on its id: equal hash_ids give byte-identical blocks (so a server's
// prefix cache sees the sharing the production trace had) and different ids give different text.
// A block is a run of common English words drawn by a PRNG seeded with the id; the words are joined
// by single spaces, blocks too, so a block reads the same wherever it stands. A row without
// hash_ids (or with fewer than its length needs) gets blocks seeded by the row itself, which no
// other row shares.
//
// Length: every word is one of 256 short common words, each one token (with its leading space) in
// the BPE vocabularies of the usual models and in `retrace serve`; without a tokenizer, one word
// stands for one token (approximate). With a tokenizer (the target's /tokenize) the number of words
// in the last block is corrected until the prompt's token count is exactly the one asked for.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace retrace {

// Counts the tokens of `text` as the target's tokenizer does; throws on failure.
using TokenCounter = std::function<std::int64_t(std::string_view text)>;

class PromptSynthesizer {
 public:
  // `count_tokens` empty: approximate (one word per token).
  explicit PromptSynthesizer(TokenCounter count_tokens = {});

  // A prompt of `tokens` tokens (at least one word) whose block k is the text of hash_ids[k];
  // blocks past the ids take seeds from `row_seed`. Reuses its buffers; the view lives until the
  // next call.
  std::string_view build(const std::vector<std::uint64_t>& hash_ids, std::int64_t block_tokens,
                         std::int64_t tokens, std::uint64_t row_seed);

  bool exact() const { return static_cast<bool>(count_tokens_); }
  // Prompts whose count the tokenizer could not bring to the exact length (closest kept).
  std::uint64_t inexact_prompts() const { return inexact_; }
  std::int64_t worst_miss() const { return worst_miss_; }

 private:
  void append_words(std::int64_t words, const std::vector<std::uint64_t>& hash_ids,
                    std::int64_t block_tokens, std::uint64_t row_seed);

  TokenCounter count_tokens_;
  std::string text_;
  std::uint64_t inexact_ = 0;
  std::int64_t worst_miss_ = 0;
};

// The words-per-token rule for real text (ShareGPT replies) when no tokenizer is given: 0.75
// words per token, the usual figure for English under BPE tokenizers. At least 1.
std::int64_t approximate_tokens(std::string_view text);

}  // namespace retrace
