// Time as text: see base/time.hpp.
#include "base/time.hpp"

#include <cctype>
#include <cstdio>
#include <stdexcept>
#include <string>

namespace retrace {

namespace {

// Reads exactly `width` digits at `at`.
std::optional<unsigned> digits(std::string_view text, std::size_t at, std::size_t width) {
  if (at + width > text.size()) return std::nullopt;
  unsigned value = 0;
  for (std::size_t i = at; i < at + width; ++i) {
    if (!std::isdigit(static_cast<unsigned char>(text[i]))) return std::nullopt;
    value = value * 10 + static_cast<unsigned>(text[i] - '0');
  }
  return value;
}

}  // namespace

std::int64_t parse_fraction_ns(std::string_view text, std::size_t& at) {
  if (at >= text.size() || text[at] != '.') return 0;
  ++at;
  std::int64_t ns = 0, scale = 100'000'000;
  std::size_t start = at;
  while (at < text.size() && std::isdigit(static_cast<unsigned char>(text[at]))) {
    ns += (text[at] - '0') * scale;
    scale /= 10;
    ++at;
  }
  if (at == start) throw std::invalid_argument("a '.' with no digits after it");
  return ns;
}

std::int64_t parse_rfc3339(std::string_view text) {
  auto year = digits(text, 0, 4), month = digits(text, 5, 2), day = digits(text, 8, 2);
  auto hour = digits(text, 11, 2), minute = digits(text, 14, 2), second = digits(text, 17, 2);
  if (!year || !month || !day || !hour || !minute || !second || text[4] != '-' || text[7] != '-' ||
      (text[10] != 'T' && text[10] != 't' && text[10] != ' ') || text[13] != ':' || text[16] != ':')
    throw std::invalid_argument("not YYYY-MM-DDTHH:MM:SS");
  if (*month < 1 || *month > 12) throw std::invalid_argument("no month " + std::to_string(*month));
  auto days = days_from_civil(static_cast<int>(*year), *month, *day);
  if (!days) throw std::invalid_argument("no such day in that month");
  if (*hour > 23 || *minute > 59 || *second > 60) throw std::invalid_argument("no such time of day");
  std::size_t at = 19;
  std::int64_t ns = parse_fraction_ns(text, at);
  std::int64_t zone_s = 0;
  if (at < text.size() && (text[at] == 'Z' || text[at] == 'z')) {
    ++at;
  } else if (at < text.size() && (text[at] == '+' || text[at] == '-')) {
    auto zone_hour = digits(text, at + 1, 2), zone_minute = digits(text, at + 4, 2);
    if (!zone_hour || !zone_minute || text[at + 3] != ':' || *zone_hour > 23 || *zone_minute > 59)
      throw std::invalid_argument("a zone is +HH:MM or -HH:MM");
    zone_s = (text[at] == '-' ? -1 : 1) * static_cast<std::int64_t>(*zone_hour * 3600 + *zone_minute * 60);
    at += 6;
  } else {
    throw std::invalid_argument("no zone: end it with Z (UTC) or an offset such as +01:00");
  }
  if (at != text.size()) throw std::invalid_argument("unexpected '" + std::string(text.substr(at)) + "'");
  // A leap second (:60) is read as the first instant of the next minute.
  std::int64_t seconds = *days * 86400 + *hour * 3600 + *minute * 60 + *second - zone_s;
  return seconds * 1'000'000'000 + ns;
}

std::string format_rfc3339(std::int64_t unix_ns) {
  std::int64_t seconds = unix_ns / 1'000'000'000, ns = unix_ns % 1'000'000'000;
  if (ns < 0) ns += 1'000'000'000, seconds -= 1;
  std::int64_t days = seconds / 86400, rest = seconds % 86400;
  if (rest < 0) rest += 86400, days -= 1;
  const std::chrono::year_month_day date{std::chrono::sys_days{std::chrono::days{days}}};
  char text[64];
  std::snprintf(text, sizeof text, "%04d-%02u-%02uT%02lld:%02lld:%02lld.%09lldZ", int(date.year()),
                unsigned(date.month()), unsigned(date.day()), static_cast<long long>(rest / 3600),
                static_cast<long long>(rest / 60 % 60), static_cast<long long>(rest % 60),
                static_cast<long long>(ns));
  return text;
}

}  // namespace retrace
