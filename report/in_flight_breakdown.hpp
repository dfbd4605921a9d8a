// Outputs by the client's requests in flight when each was sent (diff::RunComparison::
// by_in_flight): the buckets `diff --json` (`"by_in_flight"`) and a study's summary carry, and the
// sentence the terminal report says, e.g. "58 of 60 differing outputs were sent with ≥ 9 requests
// in flight; 0 of 120 with ≤ 2".
//
// Buckets double: 1, 2, 3–4, 5–8, 9–16, 17–32, 33–64, ... (a batched kernel's choice usually
// changes at such sizes; retrace serve --batch-variance's at 3, 9 and 33). Only buckets with a
// compared output are listed; each with its differing count and the 95 % Clopper–Pearson upper
// bound on its rate (metrics/statistics.hpp).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <boost/json/array.hpp>

#include "diff/diff.hpp"

namespace retrace::report {

struct InFlightBucket {
  std::size_t from = 0, to = 0;  // in flight at send, both included
  std::size_t compared = 0, differing = 0;
  std::optional<double> differ_rate_upper95;
};

std::vector<InFlightBucket> in_flight_buckets(const std::vector<diff::InFlightTally>& tallies);

// [{"in_flight_from":3,"in_flight_to":4,"compared":..,"differing":..,"differ_rate_upper95":..}, ...]
boost::json::array in_flight_json(const std::vector<InFlightBucket>& buckets);

// Where the differing outputs were: the smallest load S at or above which at least 90 % of them
// were sent ("D of N differing outputs were sent with ≥ S requests in flight"), and how the
// lightest loads fared: the lowest buckets with no differing output ("0 of M with ≤ E"), or else
// those below S. "" when nothing differed or no exchange says its load.
std::string in_flight_sentence(const std::vector<InFlightBucket>& buckets);

}  // namespace retrace::report
