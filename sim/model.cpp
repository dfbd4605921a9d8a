// The simulator's model and generation loop: candidate logits by a split bfloat16 reduction,
// greedy and nucleus sampling, stop strings (see engine.hpp).
#include "sim/engine.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

#include "base/splitmix.hpp"
#include "base/text.hpp"

namespace retrace::sim {

namespace {

std::uint64_t mix(std::uint64_t x) { return splitmix64_finalise(x + kSplitmixGamma); }

// Uniform in [-sqrt(3), sqrt(3)): mean 0, variance 1.
float unit_float(std::uint32_t bits) {
  return (float(bits >> 8) * (1.0f / 16777216.0f) - 0.5f) * 3.4641016f;
}

// Round to the nearest bfloat16 (ties to even), returned as float: the precision of a split
// reduction's partial sums.
float round_to_bfloat16(float value) {
  std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
  bits += 0x7fff + ((bits >> 16) & 1);
  bits &= 0xffff0000u;
  return std::bit_cast<float>(bits);
}

// Weights of the generation pools, tuned so greedy text has sentences of ~8-15 words, a comma now
// and then, and ends (end-of-sequence) every few hundred tokens.
constexpr int kWordCandidates = 24;
constexpr float kLogitScale = 2.0f / 8.0f;  // dot / sqrt(kHiddenSize) * 2
constexpr float kPeriodPrior = 0.2f;
constexpr float kCommaPrior = 0.0f;
constexpr float kParagraphPrior = -1.2f;
constexpr float kEndPrior = -2.6f;

}  // namespace

// ---------------------------------------------------------------------------------------------
// Model

void Context::push(TokenId token) {
  hash = mix(hash ^ (std::uint64_t(std::uint32_t(token)) * 0xff51afd7ed558ccdull));
  last = token;
}

Model::Model(std::uint64_t weights_seed) : weights_seed_(weights_seed) {
  const std::size_t vocabulary = tokenizer_.size();
  embeddings_.resize(vocabulary * kHiddenSize);
  for (std::size_t token = 0; token < vocabulary; ++token) {
    std::uint64_t state = mix(weights_seed_ ^ mix(token + 1));
    for (int d = 0; d < kHiddenSize; d += 2) {
      std::uint64_t bits = mix(state + std::uint64_t(d));
      embeddings_[token * kHiddenSize + d] = unit_float(std::uint32_t(bits));
      embeddings_[token * kHiddenSize + d + 1] = unit_float(std::uint32_t(bits >> 32));
    }
  }

  priors_.assign(vocabulary, -4.0f);
  const auto& words = tokenizer_.spaced_words();
  const auto& capitals = tokenizer_.capitalised_words();
  capitalised_index_.assign(vocabulary, 0);
  // Zipf-like draw weights: rank r is drawn in proportion to 1 / (r + 10).
  constexpr std::size_t kDrawTableSize = 1 << 16;
  std::vector<double> weights(words.size());
  double total = 0;
  for (std::size_t rank = 0; rank < words.size(); ++rank) {
    weights[rank] = 1.0 / double(rank + 10);
    total += weights[rank];
    float prior = -0.25f * std::log(float(rank + 10));
    priors_[words[rank]] = prior;
    priors_[capitals[rank]] = prior;
    capitalised_index_[words[rank]] = std::uint32_t(rank);
  }
  word_draw_table_.reserve(kDrawTableSize);
  double cumulative = 0;
  for (std::size_t rank = 0; rank < words.size(); ++rank) {
    cumulative += weights[rank];
    auto until = std::size_t(cumulative / total * double(kDrawTableSize));
    while (word_draw_table_.size() < std::min(until, kDrawTableSize))
      word_draw_table_.push_back(words[rank]);
  }
  while (word_draw_table_.size() < kDrawTableSize) word_draw_table_.push_back(words.back());

  priors_[tokenizer_.period()] = kPeriodPrior;
  priors_[tokenizer_.comma()] = kCommaPrior;
  priors_[tokenizer_.paragraph()] = kParagraphPrior;
  priors_[Tokenizer::kEndOfSequence] = kEndPrior;
}

int Model::split_count_for_batch(int batch_size) {
  if (batch_size <= 2) return 16;
  if (batch_size <= 8) return 8;
  if (batch_size <= 32) return 4;
  return 2;
}

float Model::logit(const float* hidden, TokenId token, int split_count, bool reversed) const {
  const float* row = &embeddings_[std::size_t(token) * kHiddenSize];
  const int slice = kHiddenSize / split_count;
  float total = 0;
  for (int i = 0; i < split_count; ++i) {
    const int begin = (reversed ? split_count - 1 - i : i) * slice;
    float partial = 0;
    for (int d = begin; d < begin + slice; ++d) partial += hidden[d] * row[d];
    total = round_to_bfloat16(total + round_to_bfloat16(partial));
  }
  return total * kLogitScale + priors_[token];
}

void Model::candidates(const Context& context, int split_count, std::vector<Candidate>& out,
                       bool reversed) const {
  if (split_count < 1 || kHiddenSize % split_count != 0) split_count = kFixedSplitCount;
  float hidden[kHiddenSize];
  const std::uint64_t state = mix(context.hash ^ weights_seed_);
  for (int d = 0; d < kHiddenSize; d += 2) {
    std::uint64_t bits = mix(state + std::uint64_t(d) * 0x632be59bd9b4e019ull);
    hidden[d] = unit_float(std::uint32_t(bits));
    hidden[d + 1] = unit_float(std::uint32_t(bits >> 32));
  }

  const Tokenizer& vocabulary = tokenizer_;
  const TokenId last = context.last;
  const bool sentence_start =
      last < 0 || last == vocabulary.period() || last == vocabulary.paragraph() || last == '?' ||
      last == '!' || last == '\n';
  const bool after_punctuation = sentence_start || last == vocabulary.comma() || last < 256;

  out.clear();
  auto consider = [&](TokenId token) {
    for (const Candidate& seen : out)
      if (seen.token == token) return;
    out.push_back({token, logit(hidden, token, split_count, reversed)});
  };
  const std::uint64_t draw_state = mix(state ^ 0x5851f42d4c957f2dull);
  for (int i = 0; i < kWordCandidates; ++i) {
    TokenId word = word_draw_table_[mix(draw_state + std::uint64_t(i)) & (word_draw_table_.size() - 1)];
    if (sentence_start) word = vocabulary.capitalised_words()[capitalised_index_[word]];
    consider(word);
  }
  if (!after_punctuation) {
    consider(vocabulary.period());
    consider(vocabulary.comma());
    consider(Tokenizer::kEndOfSequence);
  }
  if (last == vocabulary.period()) consider(vocabulary.paragraph());
}

// ---------------------------------------------------------------------------------------------
// Generation

Generation::Generation(const Model& model, std::span<const TokenId> prompt, SamplingParams params,
                       std::optional<std::vector<TokenId>> forced)
    : model_(model), params_(std::move(params)), forced_(std::move(forced)) {
  for (TokenId token : prompt) context_.push(token);
  if (forced_) forced_->push_back(Tokenizer::kEndOfSequence);
  rng_ = mix(params_.seed ^ 0xd1b54a32d192ed03ull);
  for (const std::string& stop : params_.stop)
    stop_holdback_ = std::max(stop_holdback_, stop.empty() ? 0 : stop.size() - 1);
  if (params_.max_tokens < 1) finish_ = FinishReason::length;
}

// Nucleus sampling over the tempered distribution; ties in order broken by token id.
std::size_t Generation::sampled(float max_logit) {
  std::vector<std::size_t> order(candidates_.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    if (candidates_[a].logit != candidates_[b].logit) return candidates_[a].logit > candidates_[b].logit;
    return candidates_[a].token < candidates_[b].token;
  });
  scratch_.resize(order.size());
  float total = 0;
  for (std::size_t i = 0; i < order.size(); ++i) {
    scratch_[i] = std::exp((candidates_[order[i]].logit - max_logit) / params_.temperature);
    total += scratch_[i];
  }
  std::size_t keep = order.size();
  if (params_.top_p < 1.0f) {
    float cumulative = 0;
    for (std::size_t i = 0; i < order.size(); ++i) {
      cumulative += scratch_[i];
      if (cumulative >= params_.top_p * total) {
        keep = i + 1;
        break;
      }
    }
    total = 0;
    for (std::size_t i = 0; i < keep; ++i) total += scratch_[i];
  }
  rng_ = mix(rng_);
  float target = float(rng_ >> 40) * (1.0f / 16777216.0f) * total;
  for (std::size_t i = 0; i < keep; ++i) {
    target -= scratch_[i];
    if (target < 0) return order[i];
  }
  return order[keep - 1];
}

void Generation::keep_top_logprobs(float log_normaliser) {
  std::size_t count = std::min<std::size_t>(std::size_t(params_.top_logprobs), candidates_.size());
  std::partial_sort(candidates_.begin(), candidates_.begin() + std::ptrdiff_t(count), candidates_.end(),
                    [](const Candidate& a, const Candidate& b) {
                      if (a.logit != b.logit) return a.logit > b.logit;
                      return a.token < b.token;
                    });
  for (std::size_t i = 0; i < count; ++i)
    last_.top.push_back({candidates_[i].token, candidates_[i].logit - log_normaliser});
}

void Generation::model_token(int split_count, bool reversed_reduction) {
  model_.candidates(context_, split_count, candidates_, reversed_reduction);
  if (params_.ignore_eos)
    std::erase_if(candidates_, [](const Candidate& c) { return c.token == Tokenizer::kEndOfSequence; });
  float max_logit = -INFINITY;
  for (const Candidate& c : candidates_) max_logit = std::max(max_logit, c.logit);
  float sum = 0;
  for (const Candidate& c : candidates_) sum += std::exp(c.logit - max_logit);
  const float log_normaliser = max_logit + std::log(sum);

  std::size_t chosen = 0;
  if (params_.temperature <= 0) {
    for (std::size_t i = 1; i < candidates_.size(); ++i)
      if (candidates_[i].logit > candidates_[chosen].logit ||
          (candidates_[i].logit == candidates_[chosen].logit && candidates_[i].token < candidates_[chosen].token))
        chosen = i;
  } else {
    chosen = sampled(max_logit);
  }
  last_.token = candidates_[chosen].token;
  last_.logprob = candidates_[chosen].logit - log_normaliser;
  if (params_.top_logprobs > 0) keep_top_logprobs(log_normaliser);
}

// The earliest stop string in the text, looked for from where the newest token could complete one.
void Generation::check_stops(std::size_t old_size) {
  std::size_t earliest = std::string::npos;
  for (const std::string& stop : params_.stop) {
    if (stop.empty()) continue;
    std::size_t from = old_size >= stop.size() - 1 ? old_size - (stop.size() - 1) : 0;
    std::size_t at = text_.find(stop, from);
    if (at < earliest) {
      earliest = at;
      matched_stop_ = stop;
    }
  }
  if (earliest != std::string::npos) {
    visible_ = earliest;
    finish_ = FinishReason::stop;
  } else if (int(tokens_.size()) >= params_.max_tokens) {
    finish_ = FinishReason::length;
  }
}

const GeneratedToken& Generation::step(int split_count, bool reversed_reduction) {
  last_.top.clear();
  if (forced_) {
    last_.token = (*forced_)[tokens_.size()];
    last_.logprob = 0;
    if (params_.top_logprobs > 0) last_.top.push_back({last_.token, 0});
  } else {
    model_token(split_count, reversed_reduction);
  }
  tokens_.push_back(last_.token);
  context_.push(last_.token);
  if (last_.token == Tokenizer::kEndOfSequence) {
    finish_ = FinishReason::stop;
    return last_;
  }
  const std::size_t old_size = text_.size();
  text_ += model_.tokenizer().token_bytes(last_.token);
  visible_ = text_.size();
  check_stops(old_size);
  return last_;
}

std::string_view Generation::take_releasable_text() {
  std::size_t end = visible_;
  if (!finished()) {
    end = std::min(end, text_.size() > stop_holdback_ ? text_.size() - stop_holdback_ : 0);
    end = std::max(end, released_);
    // Do not split a UTF-8 sequence.
    end = released_ + utf8_whole_prefix(std::string_view(text_).substr(released_, end - released_));
  }
  end = std::max(end, released_);
  std::string_view piece = std::string_view(text_).substr(released_, end - released_);
  released_ = end;
  return piece;
}

}  // namespace retrace::sim
