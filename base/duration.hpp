// Durations as every flag and message spells them, written once: parse_duration reads what a
// user types, format_duration writes the shortest spelling it reads back.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

namespace retrace {

// The one duration syntax of every flag: a number with a unit, "500ms", "1.5s", "2m", "1h" (also
// "250us", "100ns"). A bare number is refused: seconds or milliseconds would be a guess. Throws
// invalid_argument "FLAG 'TEXT': why, e.g. ..." (`flag` may be empty: CLI11 adds the name itself).
std::chrono::nanoseconds parse_duration(std::string_view text, std::string_view flag);
// "5s", "1500ms", "2m": the shortest exact spelling parse_duration reads back (help defaults,
// messages that name a flag's value).
std::string format_duration(std::chrono::milliseconds value);

}  // namespace retrace
