#include "format/text.hpp"

#include <cstdint>

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

}  // namespace

bool is_valid_utf8(std::string_view bytes) {
  const auto* s = reinterpret_cast<const unsigned char*>(bytes.data());
  const std::size_t n = bytes.size();
  for (std::size_t i = 0; i < n;) {
    const std::size_t length = sequence_length(s[i]);
    if (length == 0 || i + length > n) return false;
    std::uint32_t code = length == 1 ? s[i] : s[i] & (0x7F >> length);
    for (std::size_t k = 1; k < length; ++k) {
      if (!is_continuation(s[i + k])) return false;
      code = (code << 6) | (s[i + k] & 0x3F);
    }
    if ((length == 2 && code < 0x80) || (length == 3 && code < 0x800) || (length == 4 && code < 0x10000) ||
        code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF))
      return false;
    i += length;
  }
  return true;
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
