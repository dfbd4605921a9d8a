// report/in_flight_breakdown.hpp: outputs by requests in flight at send.
#include "report/in_flight_breakdown.hpp"

#include <boost/json.hpp>

#include "base/json_text.hpp"
#include "metrics/statistics.hpp"

namespace retrace::report {

std::vector<InFlightBucket> in_flight_buckets(const std::vector<diff::InFlightTally>& tallies) {
  std::vector<InFlightBucket> buckets;
  for (std::size_t from = 1; from < tallies.size(); from = from < 2 ? from + 1 : from * 2 - 1) {
    InFlightBucket bucket;
    bucket.from = from;
    bucket.to = from < 3 ? from : from * 2 - 2;  // 3–4, 5–8, 9–16, ...
    for (std::size_t n = from; n <= bucket.to && n < tallies.size(); ++n) {
      bucket.compared += tallies[n].compared;
      bucket.differing += tallies[n].differing;
    }
    if (bucket.compared == 0) continue;
    bucket.differ_rate_upper95 = metrics::clopper_pearson_upper(bucket.differing, bucket.compared);
    buckets.push_back(bucket);
  }
  return buckets;
}

boost::json::array in_flight_json(const std::vector<InFlightBucket>& buckets) {
  boost::json::array out;
  for (const auto& bucket : buckets)
    out.push_back(boost::json::object{{"in_flight_from", bucket.from},
                                      {"in_flight_to", bucket.to},
                                      {"compared", bucket.compared},
                                      {"differing", bucket.differing},
                                      {"differ_rate_upper95", json_number(bucket.differ_rate_upper95)}});
  return out;
}

std::string in_flight_sentence(const std::vector<InFlightBucket>& buckets) {
  std::size_t differing = 0;
  for (const auto& bucket : buckets) differing += bucket.differing;
  if (differing == 0) return "";
  // S: the highest bucket start with at least 90 % of the differing outputs at or above it.
  std::size_t above = 0, start = buckets.front().from, held = differing;
  for (auto bucket = buckets.rbegin(); bucket != buckets.rend(); ++bucket) {
    above += bucket->differing;
    if (above * 10 >= differing * 9) {
      start = bucket->from;
      held = above;
      break;
    }
  }
  std::string sentence = std::to_string(held) + " of " + std::to_string(differing) +
                         " differing outputs were sent with ≥ " + std::to_string(start) + " request" +
                         (start == 1 ? "" : "s") + " in flight";
  // The light end: the lowest buckets with nothing differing, else every bucket below S.
  std::size_t light_compared = 0, light_differing = 0, light_to = 0;
  for (const auto& bucket : buckets) {
    if (bucket.differing > 0) break;
    light_compared += bucket.compared;
    light_to = bucket.to;
  }
  if (light_compared == 0) {
    for (const auto& bucket : buckets) {
      if (bucket.from >= start) break;
      light_compared += bucket.compared;
      light_differing += bucket.differing;
      light_to = bucket.to;
    }
  }
  if (light_compared > 0)
    sentence += "; " + std::to_string(light_differing) + " of " + std::to_string(light_compared) +
                " with ≤ " + std::to_string(light_to);
  return sentence;
}

}  // namespace retrace::report
