// Outputs by the server's side of each exchange (diff::ServerTallies, format 1.6): by prefix-cache
// hit or miss (`diff --json`'s "by_cache") and by preempted or not ("by_preempted"), in the shape
// of "by_in_flight"'s buckets (report/in_flight_breakdown.hpp): only groups with a compared output,
// each with its differing count and the 95 % Clopper–Pearson upper bound on its rate. And the
// terminal report's sentence, e.g. "prefix cache: 12 of 30 hits differ, 0 of 40 misses".
#pragma once

#include <string>

#include <boost/json/array.hpp>

#include "diff/diff.hpp"

namespace retrace::report {

// [{"cache":"hit","compared":..,"differing":..,"differ_rate_upper95":..}, {"cache":"miss",...}]
boost::json::array by_cache_json(const diff::ServerTallies& tallies);
// [{"preempted":true,...}, {"preempted":false,...}]
boost::json::array by_preempted_json(const diff::ServerTallies& tallies);
// "" when nothing differed or no exchange's trace says.
std::string server_sentence(const diff::ServerTallies& tallies);
// Adds `from`'s counts to `into` (a study's sum over its runs).
void add_tallies(diff::ServerTallies& into, const diff::ServerTallies& from);

}  // namespace retrace::report
