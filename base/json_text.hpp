// The one rule for JSON text retrace prints (reports, `export`, `inspect`, `cat`, `bisect`):
// every number a plain decimal, never Boost.JSON's exponent form (0.05, not 5E-2), and an absent
// value is null (never -1, 0 or "-"). Lives in base/, the ground floor, so that every room
// that prints JSON can use it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <boost/json/value.hpp>

namespace retrace {

// JSON text in which every number is a plain decimal, the shortest that reads back to the same
// double; NaN and infinities become null. Otherwise as boost::json::serialize (keys in insertion
// order, no whitespace).
std::string json_text(const boost::json::value& value);

// A number, or null when absent.
boost::json::value json_number(const std::optional<double>& value);

// A float (a logprob) as the double its shortest decimal names: -0.69f is written -0.69, not
// -0.6899999976158142, and reads back to the same float.
boost::json::value json_float(float value);

// A count or id where the trace writes -1 for "absent" (token ids, usage counts, end times): the
// value, or null when negative.
boost::json::value json_count(std::int64_t value);

}  // namespace retrace
