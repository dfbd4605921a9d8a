// Selection and the recorded clock for trace users (replay/select.cpp, make_chains): the time
// window, --max-idle-gap, --sample-sessions, --requests and the settings that record them.
#include <catch2/catch.hpp>

#include <boost/json.hpp>
#include <algorithm>
#include <set>

#include "replay/flags.hpp"
#include "replay/prepare.hpp"
#include "replay/replay.hpp"

using namespace retrace;
using namespace retrace::replay;
using namespace std::chrono_literals;

namespace {

// An imported-style exchange: the dataset's offset is its actual (and intended) send.
Exchange sent_at(std::uint64_t id, std::int64_t offset_ms, std::string session = {}) {
  Exchange e;
  e.id = id;
  e.request.method = "POST";
  e.request.target = "/v1/completions";
  e.session_id = std::move(session);
  e.intended_send_ns = e.actual_send_ns = offset_ms * 1'000'000;
  return e;
}

Options recorded(double speed = 1) {
  Options options;
  options.schedule.kind = ScheduleKind::recorded;
  options.schedule.speed = speed;
  return options;
}

// Each chosen exchange's intended offset in ms, by input position (recorded timing).
std::vector<std::pair<std::size_t, std::int64_t>> planned_offsets(const LoadedTrace& trace,
                                                                  const Options& options) {
  auto chosen = select_exchanges(trace.exchanges, options, options.sessions);
  std::vector<Prepared> prepared(chosen.size());
  for (std::size_t i = 0; i < chosen.size(); ++i) prepared[i].input_index = chosen[i];
  std::vector<std::pair<std::size_t, std::int64_t>> out;
  for (const auto& chain : make_chains(trace, prepared, options))
    for (std::size_t k = 0; k < chain.items.size(); ++k)
      out.emplace_back(prepared[chain.items[k]].input_index, chain.offsets_ns[k] / 1'000'000);
  std::sort(out.begin(), out.end());
  return out;
}

using Offsets = std::vector<std::pair<std::size_t, std::int64_t>>;

}  // namespace

TEST_CASE("the trace clock counts from the earliest exchange whatever the file order") {
  std::vector<Exchange> exchanges{sent_at(0, 5000), sent_at(1, 2000), sent_at(2, 9000)};
  CHECK(trace_clock_ns(exchanges) == std::vector<std::int64_t>{3'000'000'000, 0, 7'000'000'000});
}

TEST_CASE("a window keeps offsets in from inclusive to exclusive and the schedule starts at from") {
  LoadedTrace trace;
  trace.exchanges = {sent_at(0, 0), sent_at(1, 10'000), sent_at(2, 12'500), sent_at(3, 20'000),
                     sent_at(4, 25'000)};
  auto options = recorded();
  options.window_from = 10s;
  options.window_to = 20s;
  CHECK(select_exchanges(trace.exchanges, options, false) == std::vector<std::size_t>{1, 2});
  // Offsets from --window-from, not from the first kept exchange: 12.5 s is 2.5 s in.
  CHECK(planned_offsets(trace, options) == Offsets{{1, 0}, {2, 2500}});
  options.schedule.speed = 2;  // then --speed
  CHECK(planned_offsets(trace, options) == Offsets{{1, 0}, {2, 1250}});
  options.window_from = 11s;
  options.window_to.reset();
  CHECK(planned_offsets(trace, options) == Offsets{{2, 750}, {3, 4500}, {4, 7000}});
}

TEST_CASE("a window keeps a session whole by its first turn's offset") {
  LoadedTrace trace;
  trace.exchanges = {sent_at(0, 1000, "a"), sent_at(1, 9000, "b"), sent_at(2, 11'000, "a"),
                     sent_at(3, 30'000, "b")};
  auto options = recorded();
  options.window_from = 5s;
  options.window_to = 10s;
  // "a" began at 1 s, before the window: gone with its later turn; "b" began at 9 s: kept whole,
  // its second turn at 30 s included.
  CHECK(select_exchanges(trace.exchanges, options, false) == std::vector<std::size_t>{1, 3});
}

TEST_CASE("max idle gap shortens long waits after speed and keeps short ones and bursts") {
  LoadedTrace trace;
  // A burst at 0, a 1 s gap, a 60 s silence, a tie, then 2 s.
  trace.exchanges = {sent_at(0, 0), sent_at(1, 0), sent_at(2, 1000), sent_at(3, 61'000),
                     sent_at(4, 61'000), sent_at(5, 63'000)};
  auto options = recorded();
  options.max_idle_gap = 5s;
  CHECK(planned_offsets(trace, options) ==
        Offsets{{0, 0}, {1, 0}, {2, 1000}, {3, 6000}, {4, 6000}, {5, 8000}});
  options.schedule.speed = 2;  // 60 s becomes 30 s first, then 5 s; 2 s becomes 1 s
  CHECK(planned_offsets(trace, options) ==
        Offsets{{0, 0}, {1, 0}, {2, 500}, {3, 5500}, {4, 5500}, {5, 6500}});
}

TEST_CASE("max idle gap also shortens the wait from the window's start to the first send") {
  LoadedTrace trace;
  trace.exchanges = {sent_at(0, 0), sent_at(1, 100'000), sent_at(2, 101'000)};
  auto options = recorded();
  options.window_from = 10s;
  options.max_idle_gap = 3s;
  CHECK(planned_offsets(trace, options) == Offsets{{1, 3000}, {2, 4000}});
}

TEST_CASE("cap idle gaps maps every offset in any order") {
  std::vector<std::int64_t> offsets{50, 0, 10, 50, 200};
  cap_idle_gaps(offsets, 20);
  CHECK(offsets == std::vector<std::int64_t>{30, 0, 10, 30, 50});
}

TEST_CASE("a session sample is deterministic - keeps about the fraction and whole sessions") {
  std::vector<Exchange> exchanges;
  for (int s = 0; s < 2000; ++s)
    for (int turn = 0; turn < 2; ++turn)
      exchanges.push_back(sent_at(exchanges.size(), s * 10 + turn, "session-" + std::to_string(s)));
  auto options = recorded();
  options.sample_sessions = 0.25;
  auto chosen = select_exchanges(exchanges, options, true);
  CHECK(chosen == select_exchanges(exchanges, options, true));  // the same every time
  std::set<std::string> sessions;
  for (auto i : chosen) sessions.insert(exchanges[i].session_id);
  CHECK(chosen.size() == 2 * sessions.size());  // both turns of each kept session
  CHECK(sessions.size() > 400);
  CHECK(sessions.size() < 600);
  // A larger fraction keeps a superset; another seed another set.
  options.sample_sessions = 0.5;
  auto larger = select_exchanges(exchanges, options, true);
  CHECK(std::includes(larger.begin(), larger.end(), chosen.begin(), chosen.end()));
  options.sample_sessions = 0.25;
  options.seed = 2;
  CHECK(select_exchanges(exchanges, options, true) != chosen);
  options.sample_sessions = 1;
  CHECK(select_exchanges(exchanges, options, true).size() == exchanges.size());
}

TEST_CASE("shards of a session sample together hold exactly the sample") {
  std::vector<Exchange> exchanges;
  for (int s = 0; s < 300; ++s) exchanges.push_back(sent_at(s, s, "s" + std::to_string(s % 100)));
  auto options = recorded();
  options.sample_sessions = 0.3;
  auto whole = select_exchanges(exchanges, options, true);
  std::vector<std::size_t> union_of_shards;
  options.shard_count = 3;
  for (std::size_t shard = 0; shard < 3; ++shard) {
    options.shard_index = shard;
    auto part = select_exchanges(exchanges, options, true);
    union_of_shards.insert(union_of_shards.end(), part.begin(), part.end());
  }
  std::sort(union_of_shards.begin(), union_of_shards.end());
  CHECK(union_of_shards == whole);
}

TEST_CASE("requests cycles the selection after limit and a shorter count truncates it") {
  std::vector<Exchange> exchanges{sent_at(0, 0), sent_at(1, 1), sent_at(2, 2), sent_at(3, 3)};
  Options options;  // closed loop
  options.limit = 3;
  options.requests = 7;
  CHECK(select_exchanges(exchanges, options, false) == std::vector<std::size_t>{0, 1, 2, 0, 1, 2, 0});
  options.requests = 2;
  CHECK(select_exchanges(exchanges, options, false) == std::vector<std::size_t>{0, 1});
}

TEST_CASE("copies made by requests are sessions of their own") {
  LoadedTrace trace;
  trace.exchanges = {sent_at(0, 0, "a"), sent_at(1, 1, "a")};
  Options options;
  options.sessions = true;
  options.requests = 6;
  auto chosen = select_exchanges(trace.exchanges, options, true);
  std::vector<Prepared> prepared(chosen.size());
  std::vector<std::size_t> copies(2, 0);
  for (std::size_t i = 0; i < chosen.size(); ++i) {
    prepared[i].input_index = chosen[i];
    prepared[i].cycle = copies[chosen[i]]++;
  }
  auto chains = make_chains(trace, prepared, options);
  REQUIRE(chains.size() == 3);
  for (const auto& chain : chains) {
    REQUIRE(chain.items.size() == 2);
    CHECK(prepared[chain.items[0]].input_index == 0);
    CHECK(prepared[chain.items[1]].input_index == 1);
  }
}

TEST_CASE("trace controls that do not fit are refused naming the flag") {
  auto options = recorded();
  options.window_from = 20s;
  options.window_to = 10s;
  CHECK_THROWS_WITH(validate_trace_controls(options), Catch::Contains("--window-to"));
  options = recorded();
  options.sample_sessions = 0;
  CHECK_THROWS_WITH(validate_trace_controls(options), Catch::Contains("--sample-sessions"));
  options.sample_sessions = 1.5;
  CHECK_THROWS_WITH(validate_trace_controls(options), Catch::Contains("--sample-sessions"));
  options = recorded();
  options.requests = 10;
  CHECK_THROWS_WITH(validate_trace_controls(options), Catch::Contains("-c N or --rate R"));
  Options closed;
  closed.max_idle_gap = 1s;
  CHECK_THROWS_WITH(validate_trace_controls(closed), Catch::Contains("--timing recorded"));
}

TEST_CASE("the shared flags parse every trace control with the one duration syntax") {
  RequestFlags flags;
  flags.window_from = "10m";
  flags.window_to = "20m";
  flags.max_idle_gap = "1.5s";
  flags.sample_sessions = 0.1;
  flags.seed = 7;
  auto options = recorded();
  apply_request_flags(flags, options);
  CHECK(options.window_from == std::chrono::nanoseconds(600s));
  CHECK(options.window_to == std::chrono::nanoseconds(1200s));
  CHECK(options.max_idle_gap == std::chrono::nanoseconds(1500ms));
  CHECK(options.seed == 7);
  flags.window_from = "10";
  CHECK_THROWS_WITH(apply_request_flags(flags, options), Catch::Contains("--window-from"));
}

TEST_CASE("settings record every trace control") {
  auto options = recorded();
  options.window_from = 10s;
  options.window_to = 20s;
  options.max_idle_gap = 2s;
  options.sample_sessions = 0.5;
  options.duration = 30s;
  auto settings = boost::json::parse(to_json(run_settings(options))).as_object();
  CHECK(settings.at("window_from_ms").to_number<double>() == 10000);
  CHECK(settings.at("window_to_ms").to_number<double>() == 20000);
  CHECK(settings.at("max_idle_gap_ms").to_number<double>() == 2000);
  CHECK(settings.at("sample_sessions").to_number<double>() == 0.5);
  CHECK(settings.at("duration_ms").to_number<double>() == 30000);
  Options closed;
  closed.requests = 150;
  settings = boost::json::parse(to_json(run_settings(closed))).as_object();
  CHECK(settings.at("requests").to_number<double>() == 150);
  CHECK_FALSE(settings.contains("window_from_ms"));
}

TEST_CASE("requests record rejected are never selected and do not take a shard position") {
  LoadedTrace trace;
  for (std::uint64_t i = 0; i < 5; ++i) trace.exchanges.push_back(sent_at(i, static_cast<std::int64_t>(i)));
  trace.exchanges[1].error.kind = ErrorKind::rejected;
  trace.exchanges[1].response.status = 413;
  trace.exchanges[3].error.kind = ErrorKind::http_status;  // sent and answered 4xx: replayed
  CHECK(rejected_by_record(trace.exchanges) == 1);
  Options options;
  CHECK(select_exchanges(trace.exchanges, options, false) == std::vector<std::size_t>{0, 2, 3, 4});
  options.shard_count = 2;
  options.shard_index = 1;
  CHECK(select_exchanges(trace.exchanges, options, false) == std::vector<std::size_t>{2, 4});
  Options counted;
  counted.skipped_rejected = 1;
  CHECK(boost::json::parse(to_json(run_settings(counted))).as_object().at("skipped_rejected").to_number<double>() == 1);
  CHECK_FALSE(boost::json::parse(to_json(run_settings(Options{}))).as_object().contains("skipped_rejected"));
}

TEST_CASE("with --limit alone replay reads only the trace's first sendable exchanges, and selects from them what it selects from all") {
  // Exchanges 1 and 4 were rejected by record: they are read but not counted.
  std::vector<Exchange> exchanges;
  for (std::uint64_t id = 0; id < 8; ++id) {
    exchanges.push_back(sent_at(id, static_cast<std::int64_t>(id)));
    if (id == 1 || id == 4) exchanges.back().error = {ErrorKind::rejected, "413 by record"};
  }
  for (std::size_t limit = 1; limit <= 7; ++limit) {
    Options options;
    options.limit = limit;
    options.requests = 9;  // cycles what --limit left, from the part read as from the whole
    auto enough = enough_input(options);
    REQUIRE(enough);
    std::vector<Exchange> read;
    for (const auto& exchange : exchanges) {
      read.push_back(exchange);
      if (enough(exchange)) break;
    }
    INFO("limit " << limit << ", read " << read.size());
    const std::vector<std::size_t> read_through{1, 3, 4, 6, 7, 8, 8};  // the limit-th sendable, 1-based
    CHECK(read.size() == read_through[limit - 1]);
    CHECK(select_exchanges(read, options, false) == select_exchanges(exchanges, options, false));
  }
  // Every control that comes before --limit, or a shard's identity, needs the whole trace.
  Options options;
  CHECK_FALSE(enough_input(options));
  options.limit = 2;
  auto needs_all = [&](auto change) {
    Options changed = options;
    change(changed);
    return !enough_input(changed);
  };
  CHECK(needs_all([](Options& o) { o.filters = {"path:/v1/*"}; }));
  CHECK(needs_all([](Options& o) { o.window_from = 1s; }));
  CHECK(needs_all([](Options& o) { o.window_to = 1s; }));
  CHECK(needs_all([](Options& o) { o.sample_sessions = 0.5; }));
  CHECK(needs_all([](Options& o) { o.shard_count = 2; }));
  CHECK(needs_all([](Options& o) { o.start_at_unix_ns = 1; }));
}
