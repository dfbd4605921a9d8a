// Bisect without traffic: the binary search with an injected probe, its budget, ranges; and the
// child processes and shell commands bisect and demo start.
#include <catch2/catch.hpp>

#include <algorithm>
#include <csignal>
#include <set>

#include "sweep/sweep.hpp"
#include "tests/temp_dir.hpp"

using namespace retrace;
using namespace retrace::sweep;

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
  TempDir scratch;
  auto dir = scratch.path;
  Child child({"/bin/sh", "-c", "echo oops >&2; exit 4"}, dir / "child.err");
  CHECK_THROWS_WITH(child.wait_listening(5000), Catch::Contains("oops"));
  CHECK(child.stop() == 4);
  Child listening({"/bin/sh", "-c", "echo 'listening on http://127.0.0.1:5 now'; exec sleep 30"},
                  dir / "l.err");
  CHECK(listening.wait_listening(5000) == "http://127.0.0.1:5");
  CHECK(listening.stop() == 128 + SIGTERM);
}
