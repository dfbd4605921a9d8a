#include "base/text.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
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

// The code unit of the escape "\uXXXX" at `at`, or -1 when there is none.
long escaped_unit(const std::string& text, std::size_t at) {
  if (at + 6 > text.size() || text[at] != '\\' || text[at + 1] != 'u') return -1;
  long unit = 0;
  for (std::size_t k = at + 2; k < at + 6; ++k) {
    char c = text[k];
    int digit = c >= '0' && c <= '9' ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
    if (digit < 0) return -1;
    unit = unit * 16 + digit;
  }
  return unit;
}

bool is_high_surrogate(long unit) { return unit >= 0xD800 && unit <= 0xDBFF; }
bool is_low_surrogate(long unit) { return unit >= 0xDC00 && unit <= 0xDFFF; }

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

std::string utf8_or_replaced(std::string_view bytes) {
  if (is_valid_utf8(bytes)) return std::string(bytes);
  std::string out;
  out.reserve(bytes.size() + 16);
  for (std::size_t i = 0; i < bytes.size();) {
    const std::size_t length = utf8_char_length(bytes, i);
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

std::size_t replace_lone_surrogate_escapes(std::string& json) {
  std::size_t replaced = 0;
  // Backslashes only stand in strings in JSON, and each starts an escape: "\\u..." is an escaped
  // backslash and then text, which the step of 2 skips.
  for (std::size_t i = 0; i < json.size();) {
    const void* found = std::memchr(json.data() + i, '\\', json.size() - i);
    if (!found) break;
    i = static_cast<std::size_t>(static_cast<const char*>(found) - json.data());
    long unit = escaped_unit(json, i);
    if (unit < 0) {
      i += 2;
      continue;
    }
    if (is_high_surrogate(unit) && is_low_surrogate(escaped_unit(json, i + 6))) {
      i += 12;
      continue;
    }
    if (is_high_surrogate(unit) || is_low_surrogate(unit)) {
      json.replace(i + 2, 4, "fffd");
      ++replaced;
    }
    i += 6;
  }
  return replaced;
}

}  // namespace retrace
