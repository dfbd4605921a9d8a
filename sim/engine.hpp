// The engine of `retrace serve`: a fixed tokenizer and a small deterministic "model" that stand in
// for an LLM. It is a simulator — nothing here is a trained network — but its numerics behave like
// a batched GPU model's in the one way retrace cares about: see "Batch variance" below.
//
// Tokenizer. The vocabulary is built into the binary: ids 0..255 are the 256 single bytes (byte
// fallback, so any text round-trips), 256 is the end-of-sequence token, then a few punctuation
// tokens, then four variants of every word in sim/words.cpp ("word", " word", "Word", " Word").
// Encoding is greedy longest match; decoding concatenates token bytes.
//
// Model. The context is summarised by a rolling 64-bit hash of every token id so far (prompt and
// output). That hash seeds a pseudo-random hidden vector h of kHiddenSize floats. About 30
// candidate next tokens are drawn from the hash (words weighted by frequency, plus punctuation and
// end-of-sequence); each candidate's logit is dot(h, E[token]) scaled, plus a frequency prior,
// where the embedding rows E are fixed pseudo-random floats derived from the weights seed.
//
// Batch variance. The dot product is a split reduction, as split-K matrix kernels do it: the
// kHiddenSize terms are cut into `split_count` slices, each slice is summed in float32 and its
// partial sum is rounded to bfloat16 (the precision of the kernel's partial-sum workspace), and the
// partials are added in float32. Different split counts round differently, so logits move by about
// 1e-3..1e-2 and a near-tie between the top two candidates can flip. Without --batch-variance the
// split count is fixed (kFixedSplitCount) and outputs are bit-identical at any load; with it, the
// split count follows the number of sequences in the running batch (split_count_for_batch), the way
// GPU kernel heuristics pick a split from the problem shape — so what a request generates depends
// on what else is running, exactly the nondeterminism retrace is built to find. At batch size 1
// both modes use the same split, so an unloaded server gives the same output either way.
//
// Cache variance. With --cache-variance a request that reused prefix-cache blocks
// (sim/prefix_cache.hpp) adds its partial sums in the reverse order: the same split, rounded in
// another order, so a warm pass can flip near-ties that a cold one does not, at any batch size.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace boost::json {
class value;
}

namespace retrace::sim {

using TokenId = std::int32_t;

class Tokenizer {
 public:
  Tokenizer();

  std::vector<TokenId> encode(std::string_view text) const;
  std::string decode(std::span<const TokenId> tokens) const;
  // The bytes a token stands for ("" for end-of-sequence).
  std::string_view token_bytes(TokenId token) const { return pieces_[token]; }
  std::size_t size() const { return pieces_.size(); }
  bool valid(TokenId token) const { return token >= 0 && std::size_t(token) < pieces_.size(); }

  static constexpr TokenId kEndOfSequence = 256;

  // Generation pools, used by the model: lower-case words with a leading space (most frequent
  // first) and, for sentence starts, their capitalised forms (same order).
  const std::vector<TokenId>& spaced_words() const { return spaced_words_; }
  const std::vector<TokenId>& capitalised_words() const { return capitalised_words_; }
  TokenId period() const { return period_; }
  TokenId comma() const { return comma_; }
  TokenId paragraph() const { return paragraph_; }

 private:
  TokenId add(std::string piece);

  std::vector<std::string> pieces_;
  std::unordered_map<std::string_view, TokenId> by_piece_;  // views into pieces_ (reserved up front)
  std::size_t longest_piece_ = 1;
  std::vector<TokenId> spaced_words_;
  std::vector<TokenId> capitalised_words_;
  TokenId period_ = 0, comma_ = 0, paragraph_ = 0;
};

// The running summary of a sequence's context (prompt and output so far).
struct Context {
  std::uint64_t hash = 0x9e3779b97f4a7c15ull;
  TokenId last = -1;
  void push(TokenId token);
};

struct Candidate {
  TokenId token;
  float logit;
};

class Model {
 public:
  static constexpr int kHiddenSize = 64;
  static constexpr int kFixedSplitCount = 16;

  explicit Model(std::uint64_t weights_seed = 0);

  const Tokenizer& tokenizer() const { return tokenizer_; }
  std::uint64_t weights_seed() const { return weights_seed_; }

  // The candidate next tokens after `context` with their logits; `out` is overwritten (reused to
  // avoid allocation). Candidates are distinct; everything else has probability 0.
  // `reversed`: the partial sums are added last slice first (--cache-variance: a prefix-cache hit's
  // other kernel), which rounds differently under the bfloat16 accumulation.
  void candidates(const Context& context, int split_count, std::vector<Candidate>& out,
                  bool reversed = false) const;

  // The split a batched kernel would pick for `batch_size` sequences (more splits for small
  // batches, where split-K pays off). split_count_for_batch(1) == kFixedSplitCount.
  static int split_count_for_batch(int batch_size);

 private:
  float logit(const float* hidden, TokenId token, int split_count, bool reversed) const;

  Tokenizer tokenizer_;
  std::uint64_t weights_seed_;
  std::vector<float> embeddings_;  // size() rows of kHiddenSize
  std::vector<float> priors_;      // per token
  std::vector<TokenId> word_draw_table_;  // frequency-weighted draws from spaced_words()
  std::vector<std::uint32_t> capitalised_index_;  // spaced word token -> index in capitalised_words()
};

struct SamplingParams {
  int max_tokens = 16;
  float temperature = 1.0f;  // 0 = greedy
  float top_p = 1.0f;
  std::uint64_t seed = 0;    // of the sampler, when temperature > 0
  std::vector<std::string> stop;
  bool ignore_eos = false;
  int top_logprobs = -1;     // alternatives to report per token; -1 = no logprobs at all
};

struct TokenAlternative {
  TokenId token;
  float logprob;
};

struct GeneratedToken {
  TokenId token = 0;
  float logprob = 0;
  std::vector<TokenAlternative> top;  // filled only when top_logprobs > 0
};

enum class FinishReason : std::uint8_t { none, stop, length };

// One choice being generated: call step() until finished().
class Generation {
 public:
  // With `forced`, emits exactly those tokens (a known answer) and then end-of-sequence, instead
  // of the model's picks; their logprob is reported as 0 (the stand-in model is certain).
  Generation(const Model& model, std::span<const TokenId> prompt, SamplingParams params,
             std::optional<std::vector<TokenId>> forced = std::nullopt);

  // Produces the next token with the given reduction split. Precondition: !finished().
  const GeneratedToken& step(int split_count, bool reversed_reduction = false);

  bool finished() const { return finish_ != FinishReason::none; }
  FinishReason finish_reason() const { return finish_; }
  // The stop string that ended the generation, "" otherwise.
  const std::string& matched_stop() const { return matched_stop_; }
  // All output tokens (including a final end-of-sequence token).
  const std::vector<TokenId>& tokens() const { return tokens_; }
  // Visible output text: stop strings and what follows them are cut.
  std::string_view text() const { return std::string_view(text_).substr(0, visible_); }
  // Text not yet handed out that can no longer change: holds back bytes that might begin a stop
  // string and incomplete UTF-8 sequences until the generation is finished.
  std::string_view take_releasable_text();

 private:
  // The steps of step(): the model's token (its logprob and alternatives), the sampled choice
  // among candidates_, the stop strings looked for in the text so far.
  void model_token(int split_count, bool reversed_reduction);
  std::size_t sampled(float max_logit);
  void keep_top_logprobs(float log_normaliser);
  void check_stops(std::size_t old_size);

  const Model& model_;
  SamplingParams params_;
  std::optional<std::vector<TokenId>> forced_;
  Context context_;
  std::uint64_t rng_;
  std::vector<Candidate> candidates_;
  std::vector<float> scratch_;
  GeneratedToken last_;
  std::vector<TokenId> tokens_;
  std::string text_;
  std::size_t visible_ = 0;
  std::size_t released_ = 0;
  std::size_t stop_holdback_ = 0;
  FinishReason finish_ = FinishReason::none;
  std::string matched_stop_;
};

// Renders chat messages into the prompt text the model sees.
struct ChatMessage {
  std::string role;
  std::string content;
};
std::string render_chat(const std::vector<ChatMessage>& messages);

// Reads an OpenAI `messages` array (content as a string or a list of {"type":"text","text":...}
// parts). On a problem returns nullopt and sets `error_param` (e.g. "messages[1].content") and
// `error_message`.
std::optional<std::vector<ChatMessage>> parse_chat_messages(const boost::json::value& messages,
                                                            std::string& error_param,
                                                            std::string& error_message);

// Known answers (--answers FILE): JSONL lines {"prompt": "...", "answer": "..."} or
// {"messages": [...], "answer": "..."}. Matching is exact on the prompt, or on the messages' roles
// and text contents.
class AnswerBook {
 public:
  AnswerBook() = default;
  // Throws std::runtime_error naming the file, line and problem.
  static AnswerBook load(const std::string& path);
  void add_prompt(std::string prompt, std::string answer);
  void add_messages(const std::vector<ChatMessage>& messages, std::string answer);
  const std::string* find_prompt(std::string_view prompt) const;
  const std::string* find_messages(const std::vector<ChatMessage>& messages) const;
  std::size_t size() const { return answers_.size(); }

 private:
  std::unordered_map<std::string, std::string> answers_;  // keyed by kind-tagged canonical text
};

}  // namespace retrace::sim
