#include "format/text.hpp"

#include <cstdint>
#include <string>

namespace retrace {
namespace {

// The length of the sequence `lead` opens; 0 when it cannot open one (a continuation byte, 0xF8+).
std::size_t sequence_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if ((lead & 0xE0) == 0xC0) return 2;
  if ((lead & 0xF0) == 0xE0) return 3;
  if ((lead & 0xF8) == 0xF0) return 4;
  return 0;
}

bool is_continuation(unsigned char byte) { return (byte & 0xC0) == 0x80; }

// The length of the valid character at s[i] (of n bytes), 0 when none starts there.
std::size_t valid_character(const unsigned char* s, std::size_t i, std::size_t n) {
  const std::size_t length = sequence_length(s[i]);
  if (length == 0 || i + length > n) return 0;
  std::uint32_t code = length == 1 ? s[i] : s[i] & (0x7F >> length);
  for (std::size_t k = 1; k < length; ++k) {
    if (!is_continuation(s[i + k])) return 0;
    code = (code << 6) | (s[i + k] & 0x3F);
  }
  if ((length == 2 && code < 0x80) || (length == 3 && code < 0x800) || (length == 4 && code < 0x10000) ||
      code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF))
    return 0;
  return length;
}

}  // namespace

bool is_valid_utf8(std::string_view bytes) {
  const auto* s = reinterpret_cast<const unsigned char*>(bytes.data());
  for (std::size_t i = 0; i < bytes.size();) {
    const std::size_t length = valid_character(s, i, bytes.size());
    if (length == 0) return false;
    i += length;
  }
  return true;
}

std::string utf8_or_replaced(std::string_view bytes) {
  if (is_valid_utf8(bytes)) return std::string(bytes);
  const auto* s = reinterpret_cast<const unsigned char*>(bytes.data());
  std::string out;
  out.reserve(bytes.size() + 16);
  for (std::size_t i = 0; i < bytes.size();) {
    const std::size_t length = valid_character(s, i, bytes.size());
    if (length == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD REPLACEMENT CHARACTER, for one byte
      ++i;
    } else {
      out.append(bytes.substr(i, length));
      i += length;
    }
  }
  return out;
}

std::size_t utf8_whole_prefix(std::string_view text) {
  const std::size_t n = text.size();
  std::size_t start = n;  // the start of the last character's continuation bytes
  while (start > 0 && n - start < 4 && is_continuation(static_cast<unsigned char>(text[start - 1]))) --start;
  if (start == 0) return n;
  const std::size_t lead = start - 1;
  const std::size_t needed = sequence_length(static_cast<unsigned char>(text[lead]));
  return needed > n - lead ? lead : n;
}

}  // namespace retrace
