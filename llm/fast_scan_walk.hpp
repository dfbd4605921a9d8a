// Internal to llm/, included by fast_scan_shape*.cpp only: how ShapeReader (fast_scan_shape.hpp)
// walks an event's containers (container, member, object, array) and matches the keys it reads
// (is, first_time), kept apart from the rules of what each key's value means.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

#include "llm/fast_scan_shape.hpp"

namespace retrace::llm {

inline constexpr int kMaxDepth = 48;  // below basic_parser's max_depth (64), so it never judges alone

template <class Item>
bool ShapeReader::container(char open, char close, Item item, bool entered) {
  if (!entered) {
    if (p_ == end_ || *p_ != open || ++depth_ > kMaxDepth) return false;
    ++p_;
    skip_space();
    if (p_ != end_ && *p_ == close) {
      ++p_;
      --depth_;
      return true;
    }
  }
  for (;;) {
    if (p_ == end_ || !item()) return false;
    skip_space();
    if (p_ == end_) return finished_;  // the end reached by take_tail() closes every container
    if (*p_ == ',') {
      ++p_;
      skip_space();
      continue;
    }
    if (*p_ != close) return false;
    ++p_;
    --depth_;
    return true;
  }
}

template <class Key>
bool ShapeReader::member(Key key) {
  std::string_view name;
  if (*p_ != '"' || !string(name)) return false;
  skip_space();
  if (p_ == end_ || *p_ != ':') return false;
  ++p_;
  skip_space();
  return key(name);  // reads the value; `name` may point into the buffer it reuses
}

template <class Key>
bool ShapeReader::object(Key key) {
  return container('{', '}', [&] { return member(key); });
}

template <class Element>
bool ShapeReader::array(Element element) {
  return container('[', ']', element);
}

// Whether `name` is `word`, inline: string_view's == called memcmp for the longer keys, each key of
// each event. Up to 16 bytes as two words that may overlap (both ends of the name).
template <class Word>
inline bool same_word(const char* a, const char* b) {
  Word x, y;
  std::memcpy(&x, a, sizeof x);
  std::memcpy(&y, b, sizeof y);
  return x == y;
}
template <std::size_t N>
inline bool is(std::string_view name, const char (&word)[N]) {
  constexpr std::size_t size = N - 1;
  if (name.size() != size) return false;
  const char* at = name.data();
  if constexpr (size > 16) {
    return std::memcmp(at, word, size) == 0;
  } else if constexpr (size >= 8) {
    return same_word<std::uint64_t>(at, word) && same_word<std::uint64_t>(at + size - 8, word + size - 8);
  } else if constexpr (size >= 4) {
    return same_word<std::uint32_t>(at, word) && same_word<std::uint32_t>(at + size - 4, word + size - 4);
  } else {
    return std::memcmp(at, word, size) == 0;
  }
}

// Marks `bit` in `seen`; false when it was there (which duplicate wins is the DOM's business).
inline bool first_time(std::uint32_t& seen, std::uint32_t bit) {
  if (seen & bit) return false;
  seen |= bit;
  return true;
}

}  // namespace retrace::llm
