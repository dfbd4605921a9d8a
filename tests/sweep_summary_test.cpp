// A sweep's summary arithmetic without traffic: spread, differing requests and near-ties per level,
// unique completions, the JSON and Markdown renderings, expected answers.
#include <catch2/catch.hpp>

#include <optional>
#include <string>

#include <boost/json.hpp>

#include "report/html.hpp"
#include "run_headers.hpp"
#include "sweep/sweep.hpp"

using namespace retrace;
using namespace retrace::sweep;
using namespace retrace::test;

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

// A run's figures with its client read back from its header, as the sweep's summary reads each run.
RunFigures run_of(double level, int repeat, const TraceHeader& header) {
  RunFigures figures;
  figures.name = "c" + level_text(level) + "-r" + std::to_string(repeat);
  figures.level = level;
  figures.repeat = repeat;
  figures.client = test::client_from(header);
  return figures;
}

// Levels 1 (one run, not loaded) and 16 (a run without client figures, then a saturated one).
Summary summary_with_clients() {
  Summary summary;
  summary.trace = "t.rtrace";
  summary.target = "http://x";
  summary.baseline_run = "c1-r1";
  std::vector<std::vector<RunFigures>> levels{{run_of(1, 1, run_header(kIdleClient))},
                                              {run_of(16, 1, run_header(std::nullopt)), run_of(16, 2, run_header(kSaturatedClient))}};
  for (const auto& runs : levels) {
    diff::Result result;
    result.runs.resize(runs.size());
    summary.levels.push_back(summarize_level(runs.front().level, result, runs, {}));
    summary.runs.insert(summary.runs.end(), runs.begin(), runs.end());
  }
  return summary;
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

TEST_CASE("A sweep names its busiest run's client and every level where the client may have set the pace") {
  auto summary = summary_with_clients();
  CHECK(summary.runs[0].client.line() == kIdleLine);
  CHECK(summary.runs[1].client.line() == "client use not recorded");
  CHECK(summary.levels[0].client.line() == kIdleLine);
  CHECK(summary.levels[1].client.line() == kSaturatedLine);  // the level's most loaded run
  const std::string overall = "client: busiest run (c=16, repeat 2) " + kSaturatedLine +
                              "; may have been the bottleneck at c=16: its figures there are the client's limit as "
                              "much as the server's; client use not recorded in 1 of 3 runs";
  CHECK(sweep_client_line(summary) == overall);

  auto markdown = summary_to_markdown(summary);
  CHECK(contains(markdown, "\n" + overall + "\n"));
  CHECK(row_of(markdown, "| c1-r1 |").ends_with(" | " + kIdleLine + " |"));
  CHECK(row_of(markdown, "| c16-r1 |").ends_with(" | client use not recorded |"));
  CHECK(row_of(markdown, "| c16-r2 |").ends_with(" | " + kSaturatedLine + " |"));

  auto json = boost::json::parse(summary_to_json(summary));
  const auto& client = json.at("client");
  CHECK(client.at("summary").as_string() == overall);
  CHECK(client.at("recorded").as_bool());
  CHECK(client.at("may_be_bottleneck").as_bool());
  CHECK(client.at("bottleneck_concurrency") == boost::json::array{16});
  const auto& runs = json.at("runs").as_array();
  CHECK(runs.at(0).at("client").at("summary").as_string() == kIdleLine);
  CHECK(runs.at(0).at("client").at("cores_used").to_number<double>() == Approx(0.38));
  CHECK_FALSE(runs.at(0).at("client").at("may_be_bottleneck").as_bool());
  CHECK(runs.at(0).at("client").at("schedule_slip_p99_ms").is_null());
  CHECK(runs.at(1).at("client").is_null());
  CHECK(runs.at(2).at("client").at("may_be_bottleneck").as_bool());
  CHECK(json.at("levels").at(1).at("client").at("busiest_thread_share").to_number<double>() == Approx(0.9));

  auto csv = summary_to_csv(summary);
  CHECK(contains(csv, ",client_cores_used,client_busiest_thread_share,client_may_be_bottleneck,schedule_slip_p99_ms\r\n"));
  CHECK(contains(csv, ",0.380,0.300,0,\r\n"));
  CHECK(contains(csv, ",0.950,0.900,1,\r\n"));

  auto html = report::sweep_report(summary);
  CHECK(std::find(html.paragraphs.begin(), html.paragraphs.end(), overall) != html.paragraphs.end());
  REQUIRE(html.series.size() == 2);
  CHECK(html.series[1].client.value_or("").rfind(kSaturatedLine, 0) == 0);
  CHECK(contains(report::render_html(html), "may have been the bottleneck at c=16"));
}

TEST_CASE("A sweep whose run headers hold no client figures says so and invents no zeros") {
  Summary summary;
  std::vector<RunFigures> runs{run_of(4, 1, run_header(std::nullopt)), run_of(4, 2, run_header(std::nullopt))};
  diff::Result result;
  result.runs.resize(2);
  summary.levels.push_back(summarize_level(4, result, runs, {}));
  summary.runs = runs;
  CHECK(sweep_client_line(summary) == "client use not recorded");
  auto markdown = summary_to_markdown(summary);
  CHECK(contains(markdown, "\nclient use not recorded\n"));
  CHECK_FALSE(contains(markdown, "of one core"));
  auto json = boost::json::parse(summary_to_json(summary));
  CHECK_FALSE(json.at("client").at("recorded").as_bool());
  CHECK_FALSE(json.at("client").at("may_be_bottleneck").as_bool());
  CHECK(json.at("levels").at(0).at("client").is_null());
  CHECK(contains(summary_to_csv(summary), ",,,,\r\n"));  // the client's four columns, empty
  CHECK_FALSE(report::sweep_report(summary).series.at(0).client.has_value());
}

TEST_CASE("An open-loop run's client line carries its schedule slip p99 and a closed-loop one does not") {
  auto stats = replay::compute_stats(run_header(kIdleClient, "rate"), {});
  CHECK(stats.open_loop);
  stats.schedule_slip.count = 10;
  stats.schedule_slip.p99 = 1.254;
  CHECK(metrics::client_of(stats).line() == kIdleLine + "; schedule slip p99 1.25 ms");
  stats.open_loop = false;
  CHECK(metrics::client_of(stats).line() == kIdleLine);

  Summary summary;
  summary.axis = "rate";
  RunFigures run = run_of(2.5, 1, run_header(kIdleClient, "rate"));
  run.client.slip_p99_ms = 1.254;
  summary.runs = {run};
  CHECK(sweep_client_line(summary) == "client: busiest run (rate=2.5, repeat 1) " + kIdleLine +
                                          "; schedule slip p99 1.25 ms");
  auto json = boost::json::parse(summary_to_json(summary));
  CHECK(json.at("runs").at(0).at("client").at("schedule_slip_p99_ms").to_number<double>() == Approx(1.254));
  CHECK(json.at("client").at("bottleneck_rate") == boost::json::array{});
}
