// Durations: see base/duration.hpp.
#include "base/duration.hpp"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <stdexcept>

#include "base/ascii.hpp"

namespace retrace {

std::chrono::nanoseconds parse_duration(std::string_view text, std::string_view flag) {
  auto value_text = std::string(trim(text));
  auto bad = [&](const std::string& why) {
    return std::invalid_argument((flag.empty() ? "" : std::string(flag) + " ") + "'" + value_text +
                                 "': " + why);
  };
  text = trim(text);
  std::size_t unit_at = 0;
  while (unit_at < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[unit_at])) || text[unit_at] == '.'))
    ++unit_at;
  auto number = text.substr(0, unit_at), unit = text.substr(unit_at);
  double value = 0;
  auto [ptr, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
  if (number.empty() || ec != std::errc() || ptr != number.data() + number.size())
    throw bad("expected a number with a unit, e.g. 500ms, 1.5s, 2m");
  if (unit.empty())
    throw bad("give a unit, e.g. " + value_text + "s or " + value_text +
              "ms (a bare number could mean either)");
  double ns_per_unit = 0;
  if (unit == "ms") ns_per_unit = 1e6;
  else if (unit == "s") ns_per_unit = 1e9;
  else if (unit == "us") ns_per_unit = 1e3;
  else if (unit == "ns") ns_per_unit = 1;
  else if (unit == "m" || unit == "min") ns_per_unit = 60e9;
  else if (unit == "h") ns_per_unit = 3600e9;
  else
    throw bad("unknown unit '" + std::string(unit) + "' (use ms, s, m or h; us and ns too)");
  double ns = value * ns_per_unit;
  if (!(ns < 9e18)) throw bad("too large (at most about 290 years)");
  return std::chrono::nanoseconds(static_cast<std::int64_t>(std::llround(ns)));
}

std::string format_duration(std::chrono::milliseconds value) {
  auto ms = value.count();
  if (ms != 0 && ms % 60'000 == 0) return std::to_string(ms / 60'000) + "m";
  if (ms % 1000 == 0) return std::to_string(ms / 1000) + "s";
  return std::to_string(ms) + "ms";
}

}  // namespace retrace
