// Sweep and bisect logic without traffic: the run layout, plan.json round trip and resume, the
// summary arithmetic, and the binary search with an injected probe.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <set>

#include "sweep/sweep.hpp"

using namespace retrace;
using namespace retrace::sweep;

namespace {

std::filesystem::path scratch_dir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() /
             ("retrace-sweep-test-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

Plan sample_plan() {
  Plan plan;
  plan.trace = "/data/gold.rtrace";
  plan.target = "http://127.0.0.1:8000";
  plan.levels = {1, 16, 32};
  plan.repeats = 3;
  plan.order = Order::grouped;
  plan.replay.set = {"temperature=0"};
  plan.replay.headers = {"X-Trace: yes", "Authorization: Bearer sk-secret"};
  plan.replay.token_ids = "vllm";
  plan.replay.limit = 5;
  plan.runs = plan_runs(plan.levels, plan.repeats, plan.order);
  return plan;
}

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

TEST_CASE("The baseline is the first level's first repeat in either order") {
  for (auto order : {Order::grouped, Order::interleaved}) {
    auto runs = plan_runs({4, 1, 8}, 2, order);
    REQUIRE(runs.size() == 6);
    CHECK(runs.front().name == "c4-r1");
    CHECK(runs.front().baseline);
    CHECK(std::count_if(runs.begin(), runs.end(), [](auto& run) { return run.baseline; }) == 1);
    std::set<std::string> files;
    for (auto& run : runs) files.insert(run.file);
    CHECK(files.size() == 6);
  }
}

TEST_CASE("Grouped order runs a level's repeats together and interleaved cycles through levels") {
  auto grouped = plan_runs({1, 16}, 2, Order::grouped);
  CHECK(grouped[1].name == "c1-r2");
  CHECK(grouped[2].name == "c16-r1");
  auto interleaved = plan_runs({1, 16}, 2, Order::interleaved);
  CHECK(interleaved[1].name == "c16-r1");
  CHECK(interleaved[2].name == "c1-r2");
  CHECK(interleaved[3].file == "c16-r2.rtrace");
}

TEST_CASE("Concurrency levels parse as distinct positive integers") {
  CHECK(parse_levels("1,16,32") == std::vector<double>{1, 16, 32});
  CHECK(parse_levels(" 8 ") == std::vector<double>{8});
  CHECK_THROWS_WITH(parse_levels("1.5"), Catch::Contains("--concurrency"));
  CHECK_THROWS_WITH(parse_levels("1,x"), Catch::Contains("'x'"));
  CHECK_THROWS_WITH(parse_levels("1,0"), Catch::Contains("positive"));
  CHECK_THROWS_WITH(parse_levels("4,4"), Catch::Contains("twice"));
  CHECK_THROWS(plan_runs({1}, 0, Order::grouped));
}

TEST_CASE("Rate and speed levels parse as distinct numbers above 0 naming their flag") {
  CHECK(parse_levels("1,2,4,8", Axis::rate) == std::vector<double>{1, 2, 4, 8});
  CHECK(parse_levels("0.5,1,2", Axis::speed) == std::vector<double>{0.5, 1, 2});
  CHECK_THROWS_WITH(parse_levels("1,0", Axis::rate), Catch::Contains("--rate: '0'"));
  CHECK_THROWS_WITH(parse_levels("x", Axis::speed), Catch::Contains("--speed: 'x'"));
  CHECK_THROWS_WITH(parse_levels("2,2.0", Axis::rate), Catch::Contains("twice"));
  CHECK(axis_from_string("rate") == Axis::rate);
  CHECK_FALSE(axis_from_string("threads"));
}

TEST_CASE("Rate and speed levels have the bounds of replay's --rate and --speed") {
  CHECK(parse_levels("0.000000001,1000000000", Axis::rate) == std::vector<double>{1e-9, 1e9});
  CHECK_THROWS_WITH(parse_levels("2e9", Axis::rate), Catch::Contains("from 0.000000001 to 1000000000"));
  CHECK_THROWS_WITH(replay::parse_rate("2e9"), Catch::Contains("from 0.000000001 to 1000000000"));
  CHECK_THROWS_WITH(parse_levels("2e6", Axis::speed), Catch::Contains("between 0.000001 and 1000000"));
  CHECK_THROWS_WITH(replay::check_speed(2e6), Catch::Contains("between 0.000001 and 1000000"));
}

TEST_CASE("A rate sweep takes --burstiness as replay does and keeps it through plan.json") {
  auto plan = sample_plan();
  plan.axis = Axis::rate;
  plan.levels = {2};
  plan.arrival = "gamma";
  plan.burstiness = 0.5;
  plan.runs = plan_runs(plan.levels, 1, plan.order, plan.axis);
  auto schedule = schedule_at(plan, 2);
  CHECK(schedule.arrival == replay::Arrival::gamma);
  CHECK(schedule.burstiness == 0.5);
  auto back = plan_from_json(plan_to_json(plan), "plan.json");
  REQUIRE(back.burstiness.has_value());
  CHECK(*back.burstiness == 0.5);
  plan.arrival = "constant";
  CHECK_THROWS_WITH(schedule_at(plan, 2), Catch::Contains("--burstiness is the shape of gamma arrivals"));
  plan.arrival = "gamma";
  plan.burstiness = 0;
  CHECK_THROWS_WITH(schedule_at(plan, 2), Catch::Contains("--burstiness must be above 0"));
}

TEST_CASE("Runs on the rate and speed axes are named by axis and level") {
  auto rates = plan_runs({2, 0.5}, 2, Order::grouped, Axis::rate);
  CHECK(rates[0].name == "rate2-r1");
  CHECK(rates[2].file == "rate0.5-r1.rtrace");
  auto speeds = plan_runs({0.5}, 1, Order::grouped, Axis::speed);
  CHECK(speeds[0].file == "speed0.5-r1.rtrace");
}

TEST_CASE("Each axis gives its schedule - rate with the plan's arrivals and speed recorded timing") {
  Plan plan;
  plan.axis = Axis::rate;
  plan.arrival = "constant";
  auto schedule = schedule_at(plan, 4);
  CHECK(schedule.kind == replay::ScheduleKind::rate);
  CHECK(schedule.rate == 4);
  CHECK(schedule.arrival == replay::Arrival::constant);
  plan.axis = Axis::speed;
  schedule = schedule_at(plan, 0.5);
  CHECK(schedule.kind == replay::ScheduleKind::recorded);
  CHECK(schedule.speed == 0.5);
  plan.axis = Axis::concurrency;
  schedule = schedule_at(plan, 16);
  CHECK(schedule.kind == replay::ScheduleKind::concurrency);
  CHECK(schedule.concurrency == 16);
  plan.axis = Axis::rate;
  plan.arrival = "bursty";
  CHECK_THROWS_WITH(schedule_at(plan, 1), Catch::Contains("--arrival"));
}

TEST_CASE("A rate sweep's plan keeps its axis - levels - arrival and trace controls through plan.json") {
  auto plan = sample_plan();
  plan.axis = Axis::rate;
  plan.levels = {0.5, 2};
  plan.arrival = "gamma";
  plan.runs = plan_runs(plan.levels, 1, plan.order, plan.axis);
  plan.replay.requests = 150;
  plan.replay.duration = "30s";
  plan.replay.window_from = "10m";
  plan.replay.sample_sessions = 0.25;
  plan.replay.seed = 9;
  auto text = plan_to_json(plan);
  CHECK(text.find("\"levels\":[0.5,2]") != std::string::npos);
  auto back = plan_from_json(text, "plan.json");
  CHECK(back.axis == Axis::rate);
  CHECK(back.levels == plan.levels);
  CHECK(back.arrival == "gamma");
  CHECK(back.runs[0].level == 0.5);
  CHECK(back.runs[0].name == "rate0.5-r1");
  CHECK(back.replay.requests == 150u);
  CHECK(back.replay.duration == "30s");
  CHECK(back.replay.window_from == "10m");
  CHECK(back.replay.sample_sessions == 0.25);
  CHECK(back.replay.seed == 9u);
}

TEST_CASE("A plan written before the axes is a concurrency sweep") {
  auto text = plan_to_json(sample_plan());
  auto strip = [&](const std::string& field_start, const std::string& field_end) {
    auto at = text.find(field_start);
    REQUIRE(at != std::string::npos);
    text.erase(at, text.find(field_end, at) - at);
  };
  strip("\"axis\"", "\"levels\"");  // also drops "arrival"
  auto back = plan_from_json(text, "plan.json");
  CHECK(back.axis == Axis::concurrency);
  CHECK(back.levels == std::vector<double>{1, 16, 32});
}

TEST_CASE("A plan survives a round trip through plan.json - without secret header values") {
  auto plan = sample_plan();
  plan.runs[0].done = true;
  plan.runs[1].done = true;
  plan.replay.no_stream = true;
  auto text = plan_to_json(plan);
  CHECK(text.find("sk-secret") == std::string::npos);
  CHECK(text.find("Authorization: [redacted]") != std::string::npos);
  auto back = plan_from_json(text, "plan.json");
  CHECK(back.trace == plan.trace);
  CHECK(back.levels == plan.levels);
  CHECK(back.repeats == 3);
  CHECK(back.replay.set == plan.replay.set);
  CHECK(back.replay.token_ids == "vllm");
  CHECK(back.replay.no_stream);
  CHECK(back.replay.limit == std::optional<std::size_t>(5));
  REQUIRE(back.runs.size() == 9);
  CHECK(back.runs[0].done);
  CHECK(back.runs[1].done);
  CHECK_FALSE(back.runs[2].done);
  CHECK(back.replay.headers[0] == "X-Trace: yes");
  // The redacted secret must be passed again: building options from the stored form says so.
  CHECK_THROWS_WITH(to_replay_options(back.replay, back.target, 1, {}),
                    Catch::Contains("--header 'Authorization"));
}

TEST_CASE("Resume continues with exactly the runs that never finished") {
  auto dir = scratch_dir("resume");
  auto plan = sample_plan();
  save_plan(plan, dir);
  CHECK(pending_runs(load_plan(dir)).size() == 9);
  plan.runs[0].done = true;
  plan.runs[1].done = true;
  plan.runs[3].done = true;  // finished out of order: only the flags count
  save_plan(plan, dir);
  CHECK_FALSE(std::filesystem::exists(dir / "plan.json.tmp"));
  auto pending = pending_runs(load_plan(dir));
  CHECK(pending == std::vector<std::size_t>{2, 4, 5, 6, 7, 8});
  std::filesystem::remove_all(dir);
}

TEST_CASE("A damaged plan is refused with the file and the field named") {
  CHECK_THROWS_WITH(plan_from_json("{", "d/plan.json"), Catch::Contains("d/plan.json: not valid JSON"));
  CHECK_THROWS_WITH(plan_from_json("{\"a\":1}", "p"), Catch::Contains("not a retrace sweep plan"));
  auto text = plan_to_json(sample_plan());
  auto broken = text;
  broken.replace(broken.find("\"repeats\":3"), 11, "\"repeats\":\"3\"");
  CHECK_THROWS_WITH(plan_from_json(broken, "p"), Catch::Contains("p: field \"repeats\": expected an integer"));
  auto escaping = text;
  escaping.replace(escaping.find("\"c1-r1.rtrace\""), 14, "\"../x.rtrace\"");
  CHECK_THROWS_WITH(plan_from_json(escaping, "p"), Catch::Contains("outside the sweep directory"));
  CHECK_THROWS_WITH(load_plan("/nonexistent-retrace-dir"), Catch::Contains("sweep directory"));
}

TEST_CASE("Replay flags become replay options - and bad ones are named") {
  ReplayArgs args;
  args.set = {"temperature=0", "max_tokens=16"};
  args.headers = {"X-A: b c"};
  args.labels = {"env=ci"};
  args.timeout = "2.5s";
  auto options = to_replay_options(args, "http://h:1", 16, {{"run", "c16-r1"}});
  CHECK(options.schedule.concurrency == 16);
  CHECK(options.set[1].first == "max_tokens");
  CHECK(options.set[1].second == "16");
  CHECK(options.headers[0].value == "b c");
  CHECK(options.timeout.count() == 2500);
  REQUIRE(options.labels.size() == 2);
  CHECK(options.labels[1].key == "run");
  args.set = {"novalue"};
  CHECK_THROWS_WITH(to_replay_options(args, "http://h:1", 1, {}), Catch::Contains("--set 'novalue'"));
  args.set.clear();
  args.token_ids = "bogus";
  CHECK_THROWS_WITH(to_replay_options(args, "http://h:1", 1, {}), Catch::Contains("--token-ids"));
  args.token_ids = "off";
  args.api_key_env = "RETRACE_TEST_SURELY_UNSET_VARIABLE";
  CHECK_THROWS_WITH(to_replay_options(args, "http://h:1", 1, {}), Catch::Contains("not set"));
  args.api_key_env.clear();
  args.filters = {"colour:red"};
  CHECK_THROWS(to_replay_options(args, "http://h:1", 1, {}));
  args.filters.clear();
  args.headers = {"Authorization: [redacted]"};
  CHECK_THROWS_WITH(to_replay_options(args, "http://h:1", 1, {}), Catch::Contains("--resume"));
  // The marker plans held before there was one: an old plan.json still asks for the secret.
  args.headers = {"Authorization: <redacted: pass --header again on --resume>"};
  CHECK_THROWS_WITH(to_replay_options(args, "http://h:1", 1, {}), Catch::Contains("--resume"));
}

TEST_CASE("A plan written with timeout_s still resumes - as the same timeout") {
  Plan plan;
  plan.trace = "t.rtrace";
  plan.target = "http://h:1";
  plan.levels = {1};
  plan.repeats = 1;
  plan.replay.timeout = "45s";
  plan.runs.push_back({"c1-r1", 1, 1, "c1-r1.rtrace", true, false});
  auto text = plan_to_json(plan);
  REQUIRE(text.find("\"timeout\":\"45s\"") != std::string::npos);
  text.replace(text.find("\"timeout\":\"45s\""), 15, "\"timeout_s\":45");
  auto restored = plan_from_json(text, "p");
  CHECK(to_replay_options(restored.replay, "http://h:1", 1, {}).timeout.count() == 45000);
}

TEST_CASE("A timeout needs a unit") {
  CHECK(replay::parse_timeout("30s").count() == 30000);
  CHECK(replay::parse_timeout("500ms").count() == 500);
  CHECK(replay::parse_timeout("2m").count() == 120000);
  CHECK_THROWS_WITH(replay::parse_timeout("30"), Catch::Contains("give a unit, e.g. 30s or 30ms"));
  CHECK_THROWS_WITH(replay::parse_timeout("soon"), Catch::Contains("'soon'"));
  CHECK_THROWS(replay::parse_timeout("0s"));
}

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

namespace {

// A fake axis: points at or after `first_differing` differ (or none when it is past the end).
struct FakeAxis {
  std::size_t first_differing;
  std::vector<std::size_t> probed;
  ProbeOutcome operator()(std::size_t index) {
    probed.push_back(index);
    ProbeOutcome outcome;
    outcome.differs = index >= first_differing;
    return outcome;
  }
};

}  // namespace

TEST_CASE("The probe budget is ceil(log2(points)) + 2") {
  CHECK(probe_budget(2) == 3);
  CHECK(probe_budget(64) == 8);
  CHECK(probe_budget(65) == 9);
  CHECK(probe_budget(5) == 5);
}

TEST_CASE("Bisect finds every boundary within the probe budget - the baseline's run included") {
  for (std::size_t points : {2, 3, 5, 8, 17, 64}) {
    for (std::size_t first = 1; first <= points; ++first) {
      FakeAxis axis{first, {}};
      std::size_t seen = 0;
      auto result = bisect(points, std::ref(axis), [&](const Probe&) { ++seen; });
      INFO("points " << points << ", first differing " << first);
      CHECK(seen == axis.probed.size());
      CHECK(axis.probed.size() + 1 <= probe_budget(points));
      CHECK(std::find(axis.probed.begin(), axis.probed.end(), 0) == axis.probed.end());
      std::set<std::size_t> distinct(axis.probed.begin(), axis.probed.end());
      CHECK(distinct.size() == axis.probed.size());
      if (first == points) {
        CHECK_FALSE(result.boundary.has_value());
      } else {
        REQUIRE(result.boundary == std::optional<std::size_t>(first));
        CHECK(result.monotonic);
        // Both neighbours are known: the one below probed (or the baseline), the one above probed.
        if (first > 1) CHECK(distinct.count(first - 1) == 1);
        if (first + 1 < points) CHECK(distinct.count(first + 1) == 1);
        CHECK(distinct.count(first) == 1);
      }
    }
  }
}

TEST_CASE("Bisect reports a broken monotonicity assumption at the boundary") {
  std::vector<std::size_t> probed;
  auto result = bisect(
      9,
      [&](std::size_t index) {
        probed.push_back(index);
        ProbeOutcome outcome;
        outcome.differs = index == 5;
        return outcome;
      });
  // The search probes 5 (differs), then 3 and 4 (do not): the boundary is 5, and its neighbour 6,
  // which should differ if the assumption held, does not.
  REQUIRE(result.boundary == std::optional<std::size_t>(5));
  CHECK_FALSE(result.monotonic);
  CHECK(result.note.find("not monotonic") != std::string::npos);
  CHECK(result.probes.back().verification);
  CHECK(result.probes.back().index == 6);
}

TEST_CASE("Ranges parse inclusively and bad ones are refused") {
  auto values = parse_range("1..64");
  CHECK(values.size() == 64);
  CHECK(values.front() == 1);
  CHECK(values.back() == 64);
  CHECK_THROWS_WITH(parse_range("64..1"), Catch::Contains("greater"));
  CHECK_THROWS_WITH(parse_range("1-64"), Catch::Contains("FROM..TO"));
  CHECK_THROWS(parse_range("0..4"));
}

TEST_CASE("A shell command's output and exit status are collected") {
  auto ok = run_shell("echo out; echo err >&2");
  CHECK(ok.exit_code == 0);
  CHECK(ok.output.find("out") != std::string::npos);
  CHECK(ok.output.find("err") != std::string::npos);
  auto failed = run_shell("echo broken; exit 3");
  CHECK(failed.exit_code == 3);
  CHECK(failed.output == "broken\n");
}

TEST_CASE("A child that never listens is reported with its stderr - and stopped") {
  auto dir = scratch_dir("child");
  Child child({"/bin/sh", "-c", "echo oops >&2; exit 4"}, dir / "child.err");
  CHECK_THROWS_WITH(child.wait_listening(5000), Catch::Contains("oops"));
  CHECK(child.stop() == 4);
  Child listening({"/bin/sh", "-c", "echo 'listening on http://127.0.0.1:5 now'; exec sleep 30"},
                  dir / "l.err");
  CHECK(listening.wait_listening(5000) == "http://127.0.0.1:5");
  CHECK(listening.stop() == 128 + SIGTERM);
  std::filesystem::remove_all(dir);
}
