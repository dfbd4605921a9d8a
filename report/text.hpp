// Text rules every renderer shares, written once: fixed-point numbers, JSON with plain decimal
// numbers, HTML and CSV escaping, and how a difference count states its bound.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/json_text.hpp"

namespace retrace::report {

// The output format's schema version, in every JSON document retrace prints: bumped when a field
// changes meaning or goes away (adding fields does not bump it).
inline constexpr int kJsonSchemaVersion = 2;

// `value` with `digits` digits after the point ("-0.0" printed as "0.0").
std::string fixed(double value, int digits);
// `value` rounded to `digits` digits after the point, for JSON a person can read (12.345, not
// 12.345000000000001): milliseconds to the microsecond, seconds to the nanosecond.
double rounded(double value, int digits);

// The one JSON number rule (plain decimals, null for absent) is base/json_text.hpp's.
using retrace::json_count;
using retrace::json_float;
using retrace::json_number;
using retrace::json_text;

// A count with thousands separated by commas: 49980 -> "49,980" (the "… and N more" of a capped list).
std::string thousands(std::size_t count);

// Text made safe inside HTML element content and attribute values (& < > " ').
std::string html_escape(std::string_view text);

// One CSV field (RFC 4180): quoted when it holds a comma, quote, CR or LF; quotes doubled. A text
// that opens with = + - @, a tab or CR and is not a number gets a leading ' (OWASP's CSV injection
// rule), so a spreadsheet shows it and runs no formula: "=1+1" is written '=1+1, "-1.5" as it is.
std::string csv_field(std::string_view text);
// One CSV record (RFC 4180): the fields, each through csv_field, comma-separated, ended by CRLF.
// The one CSV writer: every `--csv` output is rows of this. An absent value is an empty field.
std::string csv_row(const std::vector<std::string>& fields);

// A rate bound in percent as text: `decimals` from 1 % up ("4.9"; CSV asks for 2), two significant
// digits below ("0.30", "0.0015"): a bound of 0.0015 % printed as "0.00" would claim a rate of
// zero. The one rule for every place a bound is printed (text, Markdown, HTML, CSV).
std::string rate_percent_text(double percent, int decimals = 1);

// "≤ 5.0 %" — the 95 % Clopper–Pearson upper bound on the per-request rate behind k of n, in
// percent as rate_percent_text writes it; "—" when n is 0.
std::string rate_bound_text(std::size_t k, std::size_t n);

}  // namespace retrace::report
