// Whether a text holds a short needle: glibc's memmem, many times quicker than
// std::string_view::find's first-character loop on texts where that character is common (the
// "cache" looked for in every late SSE event of a response: "choices", "created", "cmpl-...").
#pragma once

#include <cstring>
#include <string_view>

namespace retrace {

inline bool contains(std::string_view text, std::string_view needle) {
  return ::memmem(text.data(), text.size(), needle.data(), needle.size()) != nullptr;
}

}  // namespace retrace
