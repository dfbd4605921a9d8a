// ASCII rules every module shares, written once: lower-casing, case-blind comparison and
// trimming. ASCII on purpose (not std::tolower): header names, flag values and CSV cells are
// compared the same way whatever the locale, and UTF-8 bytes pass through untouched.
#pragma once

#include <algorithm>
#include <string>
#include <string_view>

namespace retrace {

constexpr char ascii_lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

inline std::string ascii_lower(std::string_view text) {
  std::string out(text);
  for (auto& c : out) c = ascii_lower(c);
  return out;
}

// Equal but for ASCII case ("Content-Type" and "content-type").
constexpr bool ascii_iequals(std::string_view a, std::string_view b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                    [](char x, char y) { return ascii_lower(x) == ascii_lower(y); });
}

// Without leading and trailing spaces and tabs (HTTP's OWS, CSV cells, flag items).
constexpr std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

}  // namespace retrace
