// Calendar rules every module shares, written once (the Azure trace timestamps of dataset/ and
// replay's --start-at alike): std::chrono's proleptic Gregorian calendar.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

namespace retrace {

// Days from 1970-01-01 to a proleptic Gregorian date, nullopt when there is no such date (month 13,
// February 30, February 29 of a common year).
inline std::optional<std::int64_t> days_from_civil(int year, unsigned month, unsigned day) {
  const std::chrono::year_month_day date{std::chrono::year{year}, std::chrono::month{month},
                                         std::chrono::day{day}};
  if (!date.ok()) return std::nullopt;
  return std::chrono::sys_days{date}.time_since_epoch().count();
}

}  // namespace retrace
