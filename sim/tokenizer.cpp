// The simulator's tokenizer: built-in vocabulary, greedy longest-match encoding (see engine.hpp).
#include "sim/engine.hpp"

#include <algorithm>
#include <cctype>

namespace retrace::sim {

extern const std::string_view kWordList;

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

}  // namespace retrace::sim
