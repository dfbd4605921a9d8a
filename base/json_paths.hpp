// The values at a few key paths of a JSON object ({"usage", "prompt_tokens_details",
// "cached_tokens"}, {"temperature"}), read in one pass of Boost.JSON's SAX parser: no JSON tree,
// no allocation a text once warm. What Boost.JSON's own parse would give at those paths: the
// same grammar and limits (the default parse_options), the last of duplicate keys, and a path
// through a value that is not an object leads nowhere.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string_view>
#include <vector>

namespace retrace {

// A path's value: absent (or null, or the text did not parse), a number, or something else.
struct JsonSlot {
  enum Kind : std::uint8_t { absent, int64, uint64, real, other } kind = absent;
  std::int64_t i = 0;
  std::uint64_t u = 0;
  double d = 0;
};

class JsonPaths {
 public:
  // Each path up to four keys; the views must outlive this reader (string literals).
  explicit JsonPaths(std::initializer_list<std::initializer_list<std::string_view>> paths);
  ~JsonPaths();
  // Reads the text between the first '{' and the last '}' of `text` (as sweep/'s study audit
  // parses a body or an event); false, and every path absent, when that is not one JSON object.
  bool read(std::string_view text);
  const JsonSlot& operator[](std::size_t path) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace retrace
