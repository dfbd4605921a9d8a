// report/server_breakdown.hpp: outputs by prefix-cache hit and by preemption.
#include "report/server_breakdown.hpp"

#include <boost/json.hpp>

#include "base/json_text.hpp"
#include "metrics/statistics.hpp"

namespace retrace::report {
namespace {

void add_group(boost::json::array& out, std::string_view key, boost::json::value value,
               const diff::InFlightTally& tally) {
  if (tally.compared == 0) return;
  out.push_back(boost::json::object{
      {key, std::move(value)},
      {"compared", tally.compared},
      {"differing", tally.differing},
      {"differ_rate_upper95", json_number(metrics::clopper_pearson_upper(tally.differing, tally.compared))}});
}

std::string counted(const diff::InFlightTally& tally, std::string_view what) {
  return std::to_string(tally.differing) + " of " + std::to_string(tally.compared) + " " + std::string(what);
}

}  // namespace

boost::json::array by_cache_json(const diff::ServerTallies& tallies) {
  boost::json::array out;
  add_group(out, "cache", "hit", tallies.cache_hit);
  add_group(out, "cache", "miss", tallies.cache_miss);
  return out;
}

boost::json::array by_preempted_json(const diff::ServerTallies& tallies) {
  boost::json::array out;
  add_group(out, "preempted", true, tallies.preempted);
  add_group(out, "preempted", false, tallies.not_preempted);
  return out;
}

std::string server_sentence(const diff::ServerTallies& tallies) {
  std::string sentence;
  auto differing = [](const diff::InFlightTally& a, const diff::InFlightTally& b) {
    return a.differing + b.differing;
  };
  if (differing(tallies.cache_hit, tallies.cache_miss) > 0)
    sentence = "prefix cache: " + counted(tallies.cache_hit, "hits") + " differ, " +
               counted(tallies.cache_miss, "misses");
  if (differing(tallies.preempted, tallies.not_preempted) > 0 && tallies.preempted.compared > 0)
    sentence += (sentence.empty() ? "" : "; ") + std::string("preemptions: ") +
                counted(tallies.preempted, "sent while the server preempted") + " differ, " +
                counted(tallies.not_preempted, "without");
  return sentence;
}

void add_tallies(diff::ServerTallies& into, const diff::ServerTallies& from) {
  for (auto member : {&diff::ServerTallies::cache_hit, &diff::ServerTallies::cache_miss,
                      &diff::ServerTallies::preempted, &diff::ServerTallies::not_preempted}) {
    (into.*member).compared += (from.*member).compared;
    (into.*member).differing += (from.*member).differing;
  }
}

}  // namespace retrace::report
