// The capacity search's decisions (sweep/find.hpp) on synthetic curves, without traffic: the
// isotonic fit, bracketing and bisection, a noisy curve, a cliff, a plateau, a boundary at the
// bracket's edge, a curve that never passes, the budget, --stable, over-saturation, and
// search_history.json's round trip.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>

#include "base/splitmix.hpp"
#include "metrics/statistics.hpp"
#include "sweep/find.hpp"
#include "tests/temp_dir.hpp"

using namespace retrace;
using namespace retrace::sweep;

namespace {

using Curve = std::function<double(double level)>;

FindSummary search(const std::string& axis, std::size_t max_probes = 16) {
  FindSummary summary;
  summary.axis = axis;
  summary.slo = "e2e:2s";
  summary.max_probes = max_probes;
  return summary;
}

RunOutcome outcome(std::size_t requests, std::size_t met) {
  RunOutcome run;
  run.name = "run";
  run.requests = requests;
  run.met = met;
  run.constraints = {{"e2e", 2000, met, 1500, {}}};
  return run;
}

// Runs the search to its end: each probe meets the SLOs in round(curve(level) × requests) requests.
FindSummary drive(FindSummary summary, const Curve& curve, std::size_t requests = 200) {
  judge(summary);
  while (auto next = next_probe(summary)) {
    if (summary.runs >= summary.max_probes) break;
    add_run(summary, next->level, next->control,
            outcome(requests, static_cast<std::size_t>(std::lround(curve(next->level) * double(requests)))));
  }
  return summary;
}

// The hand-measured curve of `retrace serve --max-batch 16` (issue 43), between its points linear.
double served(double c) {
  if (c <= 17) return 1.0;
  if (c <= 18) return 0.99;
  if (c <= 20) return 0.99 - (c - 18) * (0.99 - 0.86) / 2;
  if (c <= 24) return 0.86 - (c - 20) * 0.01;
  return 0.82;
}

}  // namespace

TEST_CASE("the Clopper-Pearson lower bound mirrors the upper one") {
  CHECK(*metrics::clopper_pearson_lower(100, 100) == Approx(std::pow(0.05, 0.01)));
  CHECK(*metrics::clopper_pearson_lower(0, 10) == 0.0);
  CHECK_FALSE(metrics::clopper_pearson_lower(0, 0).has_value());
  CHECK(*metrics::clopper_pearson_lower(93, 100) == Approx(1 - *metrics::clopper_pearson_upper(7, 100)));
  CHECK(*metrics::clopper_pearson_lower(93, 100) < 0.93);
}

TEST_CASE("the isotonic fit pools adjacent violators weighted by their trials") {
  auto fit = isotonic_non_increasing({{9, 10}, {10, 10}, {5, 10}, {6, 10}});
  REQUIRE(fit.size() == 4);
  CHECK(fit[0].rate() == Approx(0.95));
  CHECK(fit[1].rate() == Approx(0.95));
  CHECK(fit[2].rate() == Approx(0.55));
  CHECK(fit[3].n == 20);
  // Already non-increasing (ties included): unchanged.
  auto same = isotonic_non_increasing({{10, 10}, {9, 10}, {9, 10}, {1, 10}});
  CHECK(same[1].n == 10);
  CHECK(same[3].rate() == Approx(0.1));
  // A violation that reaches back over several blocks pools them all, by weight.
  auto deep = isotonic_non_increasing({{8, 10}, {7, 10}, {100, 100}});
  CHECK(deep[0].rate() == Approx(115.0 / 120));
  CHECK(deep[2].n == 120);
  CHECK(isotonic_non_increasing({}).empty());
}

TEST_CASE("a monotone curve is bracketed by doubling and bisected to adjacent concurrencies") {
  auto summary = drive(search("concurrency"), served);
  CHECK(summary.answer.status == "found");
  CHECK(summary.answer.feasible_max == 18);
  CHECK(summary.answer.infeasible_min == 19);
  CHECK(summary.runs <= 12);
  REQUIRE(summary.answer.binding);
  CHECK(summary.answer.binding->name == "e2e");
  CHECK_FALSE(summary.answer.cliff);
  CHECK(report::find_exit_status(summary.answer) == report::kFindFound);
  // Doubling from 1 first: 1, 2, 4, 8, 16, 32.
  std::vector<double> first;
  for (const auto& probe : summary.probes)
    if (probe.order <= 6) first.push_back(probe.level);
  CHECK(first == std::vector<double>{1, 2, 4, 8, 16, 32});
}

TEST_CASE("one noisy probe below a passing one cannot misplace the boundary") {
  auto summary = search("concurrency");
  add_run(summary, 4, false, outcome(1000, 995));
  add_run(summary, 8, false, outcome(1000, 930));   // noise: clearly below the target on its own
  add_run(summary, 16, false, outcome(1000, 990));  // a higher load that passes
  add_run(summary, 32, false, outcome(1000, 500));
  CHECK(summary.probes[1].attainment == Approx(0.93));
  // The fit pools 8 with 16 (96 %, its interval above the target): both pass, so the boundary
  // lies between 16 and 32, and the next probe bisects there.
  CHECK(summary.answer.feasible_max == 16);
  CHECK(summary.answer.infeasible_min == 32);
  CHECK(summary.probes[1].fitted == Approx(0.96));
  CHECK(summary.probes[1].verdict == "pass");
  auto next = next_probe(summary);
  REQUIRE(next);
  CHECK(next->level == 24);
}

TEST_CASE("a noisy curve lands within two of its true boundary for most seeds") {
  // True attainment 0.99 up to 20, 0.80 above; each request meets the SLOs by a coin of that bias.
  int near = 0;
  const int seeds = 40;
  for (int seed = 1; seed <= seeds; ++seed) {
    std::uint64_t state = static_cast<std::uint64_t>(seed);
    auto summary = search("concurrency", 20);
    judge(summary);
    while (auto next = next_probe(summary)) {
      if (summary.runs >= summary.max_probes) break;
      double p = next->level <= 20 ? 0.99 : 0.80;
      std::size_t met = 0;
      for (int i = 0; i < 100; ++i) met += (double(splitmix64_next(state) >> 11) / 9007199254740992.0) < p;
      add_run(summary, next->level, false, outcome(100, met));
    }
    if (summary.answer.feasible_max && std::abs(*summary.answer.feasible_max - 20) <= 2) ++near;
  }
  CHECK(near >= seeds * 9 / 10);
}

TEST_CASE("a cliff is flagged when attainment falls off in one step") {
  auto summary = drive(search("concurrency"), [](double c) { return c <= 12 ? 1.0 : 0.1; });
  CHECK(summary.answer.status == "found");
  CHECK(summary.answer.feasible_max == 12);
  CHECK(summary.answer.infeasible_min == 13);
  CHECK(summary.answer.cliff);
}

TEST_CASE("a plateau at the target is extended and reported as undecided") {
  auto plateau = [](double c) { return c <= 4 ? 1.0 : c <= 40 ? 0.955 : 0.3; };
  auto summary = drive(search("concurrency", 40), plateau, 100);
  CHECK(summary.answer.status == "found");
  CHECK(summary.answer.feasible_max == 40);
  CHECK(summary.answer.undecided);
  REQUIRE_FALSE(summary.answer.notes.empty());
  CHECK(summary.answer.notes.front().find("uncertain") != std::string::npos);
  // The undecided probe at the final boundary was run again (two runs, pooled); those met on the
  // way (8, 16, 32: undecided too) were not, the probes around them settling the fit.
  for (const auto& probe : summary.probes) {
    CHECK(probe.runs.size() == (probe.level == 40 ? 2u : 1u));
    if (probe.level == 16) CHECK(probe.verdict == "undecided");
  }
}

TEST_CASE("a boundary at the bracket's lower edge is found in two probes") {
  auto summary = drive(search("concurrency"), [](double c) { return c <= 1 ? 1.0 : 0.5; });
  CHECK(summary.answer.status == "found");
  CHECK(summary.answer.feasible_max == 1);
  CHECK(summary.answer.infeasible_min == 2);
  CHECK(summary.runs == 2);
}

TEST_CASE("a rate search that fails at its start halves then bisects to its precision") {
  auto summary = drive(search("rate", 20), [](double rate) { return rate <= 0.3 ? 1.0 : 0.5; });
  CHECK(summary.answer.status == "found");
  REQUIRE(summary.answer.feasible_max);
  REQUIRE(summary.answer.infeasible_min);
  CHECK(*summary.answer.feasible_max <= 0.3);
  CHECK(*summary.answer.infeasible_min > 0.3);
  CHECK(*summary.answer.infeasible_min - *summary.answer.feasible_max <= 0.05 * *summary.answer.feasible_max + 1e-12);
}

TEST_CASE("a curve that never passes ends with no feasible load and exit status 1") {
  auto concurrency = drive(search("concurrency"), [](double) { return 0.5; });
  CHECK(concurrency.answer.status == "none");
  CHECK_FALSE(concurrency.answer.feasible_max);
  CHECK(concurrency.runs == 1);
  CHECK(report::find_exit_status(concurrency.answer) == report::kFindNone);
  auto rate = drive(search("rate"), [](double) { return 0.5; });
  CHECK(rate.answer.status == "none");
  CHECK(rate.runs == 7);  // 1 down to 1/64
}

TEST_CASE("a search that runs out of probes is unresolved with exit status 3") {
  auto summary = drive(search("concurrency", 4), served);
  CHECK(summary.runs == 4);
  CHECK(summary.answer.status == "unresolved");
  CHECK(report::find_exit_status(summary.answer) == report::kFindUnresolved);
  CHECK(next_probe(summary));
}

TEST_CASE("an over-saturated probe fails however many requests met the SLOs") {
  auto summary = search("rate");
  add_run(summary, 1, false, outcome(100, 100));
  auto cut = outcome(100, 100);
  cut.oversaturated = true;
  add_run(summary, 2, false, cut);
  CHECK(summary.answer.feasible_max == 1);
  CHECK(summary.answer.infeasible_min == 2);
  CHECK(summary.probes.back().verdict == "fail");
  // Too many errors fail a probe the same way.
  auto errors = search("concurrency");
  auto failed = outcome(100, 100);
  failed.errors = 5;
  add_run(errors, 1, false, failed);
  CHECK(errors.answer.status == "none");
}

TEST_CASE("the stable search finds the largest load whose answers stay the same") {
  FindSummary summary;
  summary.axis = "concurrency";
  summary.stable = 0.0;
  judge(summary);
  std::vector<std::string> order;
  while (auto next = next_probe(summary)) {
    REQUIRE(summary.runs < 16);
    auto run = outcome(20, 20);
    run.compared = 20;
    run.differing = next->level >= 3 && !next->control ? 10 : 0;
    order.push_back((next->control ? "control " : "") + report::level_text(next->level));
    add_run(summary, next->level, next->control, run);
  }
  CHECK(order == std::vector<std::string>{"1", "control 1", "2", "4", "3"});
  CHECK(summary.answer.stable_status == "found");
  CHECK(summary.answer.stable_max == 2);
  CHECK(summary.answer.unstable_min == 3);
  CHECK(summary.control_rate == 0.0);
  CHECK(report::find_exit_status(summary.answer) == report::kFindFound);
}

TEST_CASE("the backlog watch flags a backlog that keeps growing above its floor") {
  BacklogWatch watch(10);
  for (double backlog : {1.0, 5.0, 9.0, 12.0, 15.0}) CHECK_FALSE(watch.observe(backlog));
  CHECK(watch.observe(20));  // the fifth growth in a row, above the floor
  BacklogWatch dips(10);
  for (double backlog : {11.0, 12.0, 13.0, 14.0, 13.0, 15.0, 16.0, 17.0}) CHECK_FALSE(dips.observe(backlog));
  BacklogWatch low(100);
  for (double backlog : {1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0}) CHECK_FALSE(low.observe(backlog));
}

TEST_CASE("search_history.json gives back the probes and the answer") {
  TempDir dir;
  auto summary = drive(search("concurrency"), served);
  summary.trace = "/data/t.rtrace";
  save_history(summary, dir.path);
  auto loaded = load_history(dir.path);
  CHECK(loaded.trace == summary.trace);
  CHECK(loaded.runs == summary.runs);
  REQUIRE(loaded.probes.size() == summary.probes.size());
  CHECK(loaded.probes[3].met == summary.probes[3].met);
  CHECK(loaded.probes[3].runs == summary.probes[3].runs);
  CHECK(loaded.answer.feasible_max == summary.answer.feasible_max);
  CHECK_FALSE(next_probe(loaded));
  std::filesystem::remove(dir.path / "search_history.json");
  CHECK_THROWS_WITH(load_history(dir.path), Catch::Contains("search_history.json"));
}

TEST_CASE("with an SLO and --stable both boundaries are found in one search") {
  auto summary = search("concurrency", 24);
  summary.stable = 0.0;
  judge(summary);
  while (auto next = next_probe(summary)) {
    REQUIRE(summary.runs < summary.max_probes);
    auto run = outcome(100, next->level <= 16 ? 100 : 50);
    run.compared = 100;
    run.differing = next->level >= 3 && !next->control ? 40 : 0;
    add_run(summary, next->level, next->control, run);
  }
  CHECK(summary.answer.status == "found");
  CHECK(summary.answer.feasible_max == 16);
  CHECK(summary.answer.infeasible_min == 17);
  CHECK(summary.answer.stable_status == "found");
  CHECK(summary.answer.stable_max == 2);
  CHECK(summary.answer.unstable_min == 3);
  CHECK(report::find_exit_status(summary.answer) == report::kFindFound);
  // Answers that never change: the same at every load probed, and the search ends at the SLO
  // boundary (no probe past it for stability's sake).
  auto same = search("concurrency", 24);
  same.stable = 0.0;
  judge(same);
  while (auto next = next_probe(same)) {
    REQUIRE(same.runs < same.max_probes);
    auto run = outcome(100, next->level <= 16 ? 100 : 50);
    run.compared = 100;
    run.differing = 0;
    add_run(same, next->level, next->control, run);
  }
  CHECK(same.answer.feasible_max == 16);
  CHECK(same.answer.stable_status == "found");
  CHECK_FALSE(same.answer.unstable_min);
  CHECK(same.probes.back().level == 32);
  CHECK(report::find_exit_status(same.answer) == report::kFindFound);
}

TEST_CASE("a ttft limit in TPOTs is named as the binding constraint with its threshold in TPOTs") {
  auto summary = search("concurrency");
  summary.slo = "ttft:16tpot";
  auto run = [](std::size_t met) {
    RunOutcome outcome;
    outcome.name = "run";
    outcome.requests = 40;
    outcome.met = met;
    outcome.constraints = {{"ttft/tpot", 0, met, 812.3, 16.0}};
    return outcome;
  };
  add_run(summary, 4, false, run(40));
  add_run(summary, 5, false, run(29));
  REQUIRE(summary.answer.binding);
  CHECK(summary.answer.binding->name == "ttft/tpot");
  CHECK(summary.answer.binding->threshold_tpots == 16.0);
  CHECK_THAT(report::find_to_markdown(summary),
             Catch::Matchers::Contains("Binding constraint: ttft/tpot ≤ 16.0: met by 72.5 % at 5 (p95 TTFT 812.3 ms)"));
  CHECK_THAT(report::find_to_json(summary), Catch::Matchers::Contains("\"threshold_tpots\":1.6E1") ||
                                                Catch::Matchers::Contains("\"threshold_tpots\":16"));
}

TEST_CASE("a search whose every load passes stops at the axis's ceiling and says so") {
  auto concurrency = drive(search("concurrency", 40), [](double) { return 1.0; });
  std::vector<double> levels;
  for (const auto& probe : concurrency.probes) levels.push_back(probe.level);
  REQUIRE(levels.back() == double(replay::kMaxInFlight));  // 65,536 then the ceiling, not 131,072
  CHECK(levels[levels.size() - 2] == 65536);
  CHECK(concurrency.runs < 40);  // it stopped by itself, not at its budget
  CHECK(*concurrency.answer.feasible_max == double(replay::kMaxInFlight));
  REQUIRE_FALSE(concurrency.answer.notes.empty());
  CHECK_THAT(concurrency.answer.notes.back(), Catch::Contains("the most replay runs on this axis"));

  auto rate = drive(search("rate", 60), [](double) { return 1.0; });
  CHECK(rate.probes.back().level == replay::kMaxRate);
  CHECK(rate.runs < 60);
}
