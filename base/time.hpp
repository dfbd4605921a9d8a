// Time as text and calendar days, and the longest schedule, written once (the Azure trace timestamps of dataset/, replay's
// --start-at and the times a sharded run records alike): std::chrono's proleptic Gregorian
// calendar, RFC 3339 read with any zone and written in UTC.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace retrace {

// The longest a schedule may reach from its start, in years: replay's arrivals (--rate), an
// imported trace's rows and `import --from export`'s send offsets are refused past it. int64
// nanoseconds hold 292 years; no real schedule is that long, and `--timing recorded` would wait
// out an offset in the wrong unit in silence.
inline constexpr int kMaxScheduleYears = 100;
inline constexpr std::chrono::nanoseconds kMaxScheduleSpan =
    std::chrono::hours{std::int64_t{24} * 365 * kMaxScheduleYears};

// Days from 1970-01-01 to a proleptic Gregorian date, nullopt when there is no such date (month 13,
// February 30, February 29 of a common year).
inline std::optional<std::int64_t> days_from_civil(int year, unsigned month, unsigned day) {
  const std::chrono::year_month_day date{std::chrono::year{year}, std::chrono::month{month},
                                         std::chrono::day{day}};
  if (!date.ok()) return std::nullopt;
  return std::chrono::sys_days{date}.time_since_epoch().count();
}

// RFC 3339 with a zone ("2026-12-01T10:00:00Z", "2026-12-01T11:00:00.5+01:00"; 't' or ' ' for
// 'T' too) -> Unix nanoseconds; digits of the fraction past the ninth are dropped, a leap second
// is the next minute's first instant. Throws std::invalid_argument saying what is wrong, without
// the text (the caller names the flag or field and what it expects).
std::int64_t parse_rfc3339(std::string_view text);
// Unix nanoseconds -> RFC 3339 in UTC with nanoseconds, "2026-12-01T10:00:00.250000000Z".
std::string format_rfc3339(std::int64_t unix_ns);
// ".123456789..." at `at` -> nanoseconds (digits past the ninth are dropped) and advances `at`
// past it; 0 when there is no '.' at `at`. Throws std::invalid_argument for a '.' without digits.
std::int64_t parse_fraction_ns(std::string_view text, std::size_t& at);

}  // namespace retrace
