#include "format/text.hpp"

#include <algorithm>
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

std::size_t utf8_char_length(std::string_view bytes, std::size_t at) {
  const auto* s = reinterpret_cast<const unsigned char*>(bytes.data());
  const std::size_t length = sequence_length(s[at]);
  if (length == 0 || at + length > bytes.size()) return 0;
  std::uint32_t code = length == 1 ? s[at] : s[at] & (0x7F >> length);
  for (std::size_t k = 1; k < length; ++k) {
    if (!is_continuation(s[at + k])) return 0;
    code = (code << 6) | (s[at + k] & 0x3F);
  }
  if ((length == 2 && code < 0x80) || (length == 3 && code < 0x800) || (length == 4 && code < 0x10000) ||
      code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF))
    return 0;
  return length;
}

bool is_valid_utf8(std::string_view bytes) {
  for (std::size_t i = 0; i < bytes.size();) {
    if (static_cast<unsigned char>(bytes[i]) < 0x80) {  // the common case, without the call
      ++i;
      continue;
    }
    const std::size_t length = utf8_char_length(bytes, i);
    if (length == 0) return false;
    i += length;
  }
  return true;
}

std::size_t utf8_width(std::string_view text) {
  std::size_t width = 0;
  for (unsigned char c : text)
    if (!is_continuation(c)) ++width;
  return width;
}

std::string printable(std::string_view bytes, std::size_t max_bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < bytes.size();) {
    const unsigned char c = static_cast<unsigned char>(bytes[i]);
    const std::size_t length = c < 0x80 ? 1 : utf8_char_length(bytes, i);
    if (i + std::max<std::size_t>(length, 1) > max_bytes) return out + "…";
    if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c == '\r') out += "\\r";
    else if (c == '\\') out += "\\\\";
    else if (c < 0x20 || c == 0x7F || length == 0) out += {'\\', 'x', kHex[c >> 4], kHex[c & 15]};
    else out.append(bytes.substr(i, length));
    i += std::max<std::size_t>(length, 1);
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
