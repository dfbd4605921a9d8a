// The simulator's tokenizer, model, generation loop and answer book (see engine.hpp).
#include "sim/engine.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include <boost/json.hpp>

#include "base/text.hpp"

namespace retrace::sim {

extern const std::string_view kWordList;

namespace {

std::uint64_t mix(std::uint64_t x) {
  // splitmix64's finaliser: a cheap, well-spread 64-bit hash.
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

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
// Tokenizer

TokenId Tokenizer::add(std::string piece) {
  if (auto it = by_piece_.find(piece); it != by_piece_.end()) return it->second;
  auto id = TokenId(pieces_.size());
  pieces_.push_back(std::move(piece));
  by_piece_.emplace(std::string_view(pieces_.back()), id);
  longest_piece_ = std::max(longest_piece_, pieces_.back().size());
  return id;
}

Tokenizer::Tokenizer() {
  // Count the words first so pieces_ never reallocates: by_piece_ holds views into it.
  std::vector<std::string_view> words;
  for (std::size_t at = 0; at < kWordList.size();) {
    std::size_t end = kWordList.find(' ', at);
    if (end == std::string_view::npos) end = kWordList.size();
    if (end > at) words.push_back(kWordList.substr(at, end - at));
    at = end + 1;
  }
  pieces_.reserve(256 + 1 + 8 + 4 * words.size());
  for (int byte = 0; byte < 256; ++byte) add(std::string(1, char(byte)));
  pieces_.emplace_back();  // end-of-sequence: no bytes, never produced by encode()
  for (const char* piece : {"\n\n", "'s", "n't", "..."}) add(piece);
  period_ = '.';
  comma_ = ',';
  paragraph_ = by_piece_.at("\n\n");

  for (std::string_view word : words) {
    std::string lower(word), capital(word);
    capital[0] = char(std::toupper(static_cast<unsigned char>(capital[0])));
    add(lower);
    TokenId spaced = add(" " + lower);
    add(capital);
    TokenId spaced_capital = add(" " + capital);
    if (std::find(spaced_words_.begin(), spaced_words_.end(), spaced) != spaced_words_.end())
      continue;  // a duplicate in the list keeps its first (more frequent) rank
    spaced_words_.push_back(spaced);
    capitalised_words_.push_back(spaced_capital);
  }
}

std::vector<TokenId> Tokenizer::encode(std::string_view text) const {
  std::vector<TokenId> tokens;
  tokens.reserve(text.size() / 3 + 1);
  for (std::size_t at = 0; at < text.size();) {
    std::size_t length = std::min(longest_piece_, text.size() - at);
    for (;; --length) {
      if (length == 1) {  // every byte is a token
        tokens.push_back(TokenId(static_cast<unsigned char>(text[at])));
        break;
      }
      if (auto it = by_piece_.find(text.substr(at, length)); it != by_piece_.end()) {
        tokens.push_back(it->second);
        break;
      }
    }
    at += length;
  }
  return tokens;
}

std::string Tokenizer::decode(std::span<const TokenId> tokens) const {
  std::string text;
  for (TokenId token : tokens)
    if (valid(token)) text += pieces_[token];
  return text;
}

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

const GeneratedToken& Generation::step(int split_count, bool reversed_reduction) {
  last_.top.clear();
  if (forced_) {
    last_.token = (*forced_)[tokens_.size()];
    last_.logprob = 0;
    if (params_.top_logprobs > 0) last_.top.push_back({last_.token, 0});
  } else {
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
            (candidates_[i].logit == candidates_[chosen].logit &&
             candidates_[i].token < candidates_[chosen].token))
          chosen = i;
    } else {
      // Nucleus sampling over the tempered distribution; ties in order broken by token id.
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
      chosen = order[keep - 1];
      for (std::size_t i = 0; i < keep; ++i) {
        target -= scratch_[i];
        if (target < 0) {
          chosen = order[i];
          break;
        }
      }
    }
    last_.token = candidates_[chosen].token;
    last_.logprob = candidates_[chosen].logit - log_normaliser;
    if (params_.top_logprobs > 0) {
      std::size_t count = std::min<std::size_t>(std::size_t(params_.top_logprobs), candidates_.size());
      std::partial_sort(candidates_.begin(), candidates_.begin() + std::ptrdiff_t(count), candidates_.end(),
                        [](const Candidate& a, const Candidate& b) {
                          if (a.logit != b.logit) return a.logit > b.logit;
                          return a.token < b.token;
                        });
      for (std::size_t i = 0; i < count; ++i)
        last_.top.push_back({candidates_[i].token, candidates_[i].logit - log_normaliser});
    }
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

// ---------------------------------------------------------------------------------------------
// Chat and known answers

std::string render_chat(const std::vector<ChatMessage>& messages) {
  std::string prompt;
  for (const ChatMessage& message : messages) {
    prompt += "<|";
    prompt += message.role;
    prompt += "|>\n";
    prompt += message.content;
    prompt += "\n";
  }
  prompt += "<|assistant|>\n";
  return prompt;
}

std::optional<std::vector<ChatMessage>> parse_chat_messages(const boost::json::value& messages,
                                                            std::string& error_param,
                                                            std::string& error_message) {
  namespace json = boost::json;
  error_param = "messages";
  if (!messages.is_array()) {
    error_message = "'messages' must be an array of {\"role\", \"content\"} objects";
    return std::nullopt;
  }
  const json::array& list = messages.get_array();
  if (list.empty()) {
    error_message = "'messages' must not be empty";
    return std::nullopt;
  }
  std::vector<ChatMessage> parsed;
  for (std::size_t i = 0; i < list.size(); ++i) {
    std::string where = "messages[" + std::to_string(i) + "]";
    const json::object* message = list[i].if_object();
    if (!message) {
      error_param = where;
      error_message = "'" + where + "' must be an object with 'role' and 'content'";
      return std::nullopt;
    }
    const json::value* role = message->if_contains("role");
    if (!role || !role->is_string()) {
      error_param = where + ".role";
      error_message = "'" + where + ".role' must be a string such as \"user\"";
      return std::nullopt;
    }
    ChatMessage out{std::string(role->get_string()), {}};
    const json::value* content = message->if_contains("content");
    if (content && content->is_string()) {
      out.content = std::string(content->get_string());
    } else if (content && content->is_array()) {
      for (const json::value& part : content->get_array()) {
        const json::object* object = part.if_object();
        const json::value* type = object ? object->if_contains("type") : nullptr;
        if (type && type->is_string() && type->get_string() != "text") {
          // An image_url (input_audio, ...) part: nothing the toy model reads, but its bytes are
          // prompt, as a vision model's prompt grows with its images.
          out.content += json::serialize(*object);
          continue;
        }
        const json::value* text = object ? object->if_contains("text") : nullptr;
        if (!text || !text->is_string()) {
          error_param = where + ".content";
          error_message = "'" + where + ".content' parts must be {\"type\": \"text\", \"text\": ...} or media "
                          "parts such as {\"type\": \"image_url\", ...}";
          return std::nullopt;
        }
        out.content += text->get_string();
      }
    } else if (content && !content->is_null()) {
      error_param = where + ".content";
      error_message = "'" + where + ".content' must be a string or a list of text parts";
      return std::nullopt;
    } else if (!content && out.role != "assistant") {
      error_param = where + ".content";
      error_message = "'" + where + ".content' is missing";
      return std::nullopt;
    }
    parsed.push_back(std::move(out));
  }
  return parsed;
}

namespace {
std::string messages_key(const std::vector<ChatMessage>& messages) {
  std::string key = "M";
  for (const ChatMessage& message : messages) {
    key += message.role;
    key += '\x1f';
    key += message.content;
    key += '\x1e';
  }
  return key;
}
}  // namespace

void AnswerBook::add_prompt(std::string prompt, std::string answer) {
  answers_.insert_or_assign("P" + prompt, std::move(answer));
}

void AnswerBook::add_messages(const std::vector<ChatMessage>& messages, std::string answer) {
  answers_.insert_or_assign(messages_key(messages), std::move(answer));
}

const std::string* AnswerBook::find_prompt(std::string_view prompt) const {
  auto it = answers_.find("P" + std::string(prompt));
  return it == answers_.end() ? nullptr : &it->second;
}

const std::string* AnswerBook::find_messages(const std::vector<ChatMessage>& messages) const {
  auto it = answers_.find(messages_key(messages));
  return it == answers_.end() ? nullptr : &it->second;
}

AnswerBook AnswerBook::load(const std::string& path) {
  namespace json = boost::json;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open answers file " + path + ": " + std::strerror(errno));
  AnswerBook book;
  std::string line;
  for (std::size_t number = 1; std::getline(in, line); ++number) {
    auto where = [&] { return "answers file " + path + " line " + std::to_string(number) + ": "; };
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    boost::system::error_code ec;
    json::value entry = json::parse(line, ec);
    if (ec) throw std::runtime_error(where() + "not JSON (" + ec.message() + ")");
    const json::object* object = entry.if_object();
    const json::value* answer = object ? object->if_contains("answer") : nullptr;
    if (!answer || !answer->is_string())
      throw std::runtime_error(where() + "needs a string \"answer\"; expected {\"prompt\": \"...\", \"answer\": \"...\"} or {\"messages\": [...], \"answer\": \"...\"}");
    if (const json::value* prompt = object->if_contains("prompt"); prompt && prompt->is_string()) {
      book.add_prompt(std::string(prompt->get_string()), std::string(answer->get_string()));
    } else if (const json::value* messages = object->if_contains("messages")) {
      std::string param, message;
      auto parsed = parse_chat_messages(*messages, param, message);
      if (!parsed) throw std::runtime_error(where() + message);
      book.add_messages(*parsed, std::string(answer->get_string()));
    } else {
      throw std::runtime_error(where() + "needs a string \"prompt\" or a \"messages\" array");
    }
  }
  return book;
}

}  // namespace retrace::sim
