// A sweep's summary arithmetic without traffic: spread, differing requests and near-ties per level,
// unique completions, the JSON and Markdown renderings, expected answers.
#include <catch2/catch.hpp>

#include <optional>
#include <string>

#include "sweep/sweep.hpp"

using namespace retrace;
using namespace retrace::sweep;

namespace {

diff::PairResult divergent_pair(std::uint64_t baseline_id, diff::Classification classification) {
  diff::PairResult pair;
  pair.baseline_id = baseline_id;
  pair.verdict = diff::Verdict::divergent;
  diff::Divergence divergence;
  divergence.classification = classification;
  pair.divergences.push_back(divergence);
  return pair;
}

}  // namespace

TEST_CASE("Spread is (max - min) / mean in percent") {
  auto spread = spread_of({90, 100, 110});
  CHECK(spread.mean == Approx(100));
  CHECK(spread.min == 90);
  CHECK(spread.max == 110);
  CHECK(spread.spread_percent == Approx(20));
  CHECK(spread_of({42}).spread_percent == 0);
  CHECK(spread_of({}).mean == 0);
  CHECK(spread_of({0, 0}).spread_percent == 0);
}

TEST_CASE("A level counts each differing request once and near-ties only when all agree") {
  diff::Result result;
  result.baseline_exchanges = 20;
  diff::RunComparison r1, r2, r3;
  r1.divergent = 2;
  r1.pairs = {divergent_pair(3, diff::Classification::near_tie),
              divergent_pair(7, diff::Classification::near_tie)};
  r2.divergent = 2;
  r2.pairs = {divergent_pair(3, diff::Classification::near_tie),
              divergent_pair(7, diff::Classification::real_change)};
  r3.divergent = 1;
  r3.pairs = {divergent_pair(9, diff::Classification::near_tie)};
  diff::PairResult same;
  same.baseline_id = 1;
  r3.pairs.push_back(same);
  result.runs = {r1, r2, r3};

  std::vector<RunFigures> figures(3);
  figures[0].requests_per_s = 10;
  figures[1].requests_per_s = 12;
  figures[2].requests_per_s = 8;
  figures[0].matches_expected = 15;
  figures[1].matches_expected = 14;
  figures[2].matches_expected = 15;
  figures[1].errors = 1;
  replay::Stats pooled;
  pooled.ttft.p50 = 12.5;
  pooled.e2e.p99 = 99;

  auto level = summarize_level(16, result, figures, pooled);
  CHECK(level.requests == 20);
  CHECK(level.runs == 3);
  CHECK(level.differing_requests == 3);  // requests 3, 7, 9
  CHECK(level.near_tie_requests == 2);   // 3 and 9; 7 had a real change once
  CHECK(level.divergent_outputs == 5);
  CHECK(level.matches_min == std::optional<std::size_t>(14));
  CHECK(level.matches_max == std::optional<std::size_t>(15));
  CHECK(level.requests_per_s.mean == Approx(10));
  CHECK(level.requests_per_s.spread_percent == Approx(40));
  CHECK(level.errors == 1);
  CHECK(level.ttft.p50 == 12.5);
  CHECK(level.e2e.p99 == 99);
  CHECK(collect_divergences(16, result).size() == 5);
}

TEST_CASE("Unique completions count only the level's repeats - not the baseline alone") {
  diff::Result result;
  result.baseline_exchanges = 3;
  // diff lists only requests with more than one completion; the third request is unlisted.
  diff::RequestGroups split, baseline_differs;
  split.groups = {{0, 1}, {2}, {3}};
  baseline_differs.groups = {{0}, {1, 2, 3}};  // repeats agree with each other, not the baseline
  result.requests = {split, baseline_differs};
  result.runs.resize(3);
  auto level = summarize_level(8, result, std::vector<RunFigures>(3), {});
  CHECK(level.unique_completions_max == 3);
  CHECK(level.requests_varying == 1);
  CHECK(level.unique_completions_mean == Approx((3 + 1 + 1) / 3.0));
  CHECK_FALSE(level.matches_min.has_value());
}

TEST_CASE("The summary renders as JSON and Markdown with every level and divergence") {
  Summary summary;
  summary.trace = "t.rtrace";
  summary.target = "http://x";
  summary.baseline_run = "c1-r1";
  LevelSummary level;
  level.level = 16;
  level.requests = 20;
  level.differing_requests = 2;
  level.near_tie_requests = 1;
  level.matches_min = level.matches_max = 15;
  summary.levels.push_back(level);
  DivergenceEntry entry;
  entry.run = "c16-r1";
  entry.key = "00112233445566778899aabbccddeeff";
  entry.divergence.baseline_index = 12;
  entry.divergence.candidate_index = 12;
  entry.divergence.baseline_token.emplace().bytes = " Paris";
  entry.divergence.candidate_token.emplace().bytes = "\n";
  entry.divergence.margin = 0.0123;
  entry.divergence.classification = diff::Classification::near_tie;
  summary.divergences.push_back(entry);
  CHECK(summary.any_differs());
  auto json = summary_to_json(summary);
  CHECK(json.find("\"differing_requests\":2") != std::string::npos);
  CHECK(json.find("\"differs\":true") != std::string::npos);
  auto markdown = summary_to_markdown(summary);
  CHECK(markdown.find("| 16 |") != std::string::npos);
  CHECK(markdown.find("15 of 20") != std::string::npos);
  CHECK(markdown.find("2 of 20 (≤ 28.3 %; 1 near-ties)") != std::string::npos);
  CHECK(markdown.find("\" Paris\" vs \"\\n\"") != std::string::npos);
  CHECK(markdown.find("margin 0.0123") != std::string::npos);
  summary.levels[0].differing_requests = 0;
  CHECK_FALSE(summary.any_differs());
}

TEST_CASE("Expected answers reach a run through the source id - or the request key") {
  LoadedTrace input;
  input.exchanges.resize(2);
  input.exchanges[0].id = 10;
  input.exchanges[0].expected = "yes";
  input.exchanges[1].id = 11;
  input.exchanges[1].key = {1, 2};
  std::map<RequestKey, std::string> by_key{{RequestKey{1, 2}, "no"}};
  LoadedTrace run;
  run.exchanges.resize(3);
  run.exchanges[0].source_id = 10;
  run.exchanges[1].source_id = 11;
  run.exchanges[2].source_id = 99;  // unknown source: stays without an answer
  attach_expected(run, input, by_key);
  CHECK(run.exchanges[0].expected == std::optional<std::string>("yes"));
  CHECK(run.exchanges[1].expected == std::optional<std::string>("no"));
  CHECK_FALSE(run.exchanges[2].expected.has_value());
}
