// Unit tests of sharded replay: --start-at parsing, the global schedule of a shard, and the
// refusals and bookkeeping of `retrace merge` (replay/shard.hpp, replay/merge.hpp).
#include <functional>
#include <map>

#include <catch2/catch.hpp>

#include <boost/json.hpp>

#include "replay/merge.hpp"
#include "replay/prepare.hpp"
#include "replay/replay.hpp"
#include "replay/shard.hpp"
#include "report/header.hpp"
#include "tests/temp_dir.hpp"

using namespace retrace;
using namespace retrace::replay;
namespace json = boost::json;

namespace {

constexpr std::int64_t kSecond = 1'000'000'000;

// A shard's output as replay writes it: settings with the shard facts, `count` exchanges whose
// source ids are index, index + shards, ...
void write_shard(const std::filesystem::path& path, std::size_t index, std::size_t shards,
                 std::size_t count, std::size_t selected, const std::string& digest = "A",
                 int concurrency = 1,
                 const std::function<void(Options&, ShardFacts&)>& adjust = {},
                 const std::function<void(metrics::RunSettings&)>& adjust_settings = {}) {
  Options options;
  options.target = "http://127.0.0.1:1";
  options.schedule.concurrency = concurrency;
  options.shard_index = index;
  options.shard_count = shards;
  ShardFacts facts;
  facts.input_identity.digest = digest;
  facts.selected = selected;
  facts.host = "host" + std::to_string(index);
  facts.start_at_ns = 1764583200 * kSecond;
  facts.clock_offset_ns = 1000 + static_cast<std::int64_t>(index);
  if (adjust) adjust(options, facts);
  TraceHeader header;
  header.source = Source::replayed;
  auto settings = run_settings(options);
  add_shard_facts(settings, facts);
  if (adjust_settings) adjust_settings(settings);
  header.settings = to_json(settings);
  header.labels = {{"run", "shard" + std::to_string(index)}, {"concurrency", std::to_string(concurrency)}};
  TraceWriter writer(path, header);
  for (std::size_t k = 0; k < count; ++k) {
    Exchange e;
    e.id = k;
    e.source_id = index + k * shards;
    e.request.method = "POST";
    e.request.target = "/v1/completions";
    e.actual_send_ns = e.intended_send_ns = static_cast<std::int64_t>(*e.source_id) * 1000;
    e.end_ns = 10;
    e.labels = header.labels;
    writer.write(e);
  }
  writer.close();
}

std::string refusal(const std::vector<std::filesystem::path>& shards, const std::filesystem::path& out) {
  try {
    merge_shards(shards, out);
  } catch (const MergeRefused& e) {
    CHECK_FALSE(std::filesystem::exists(out));
    return e.what();
  }
  FAIL("merge was not refused");
  return {};
}

}  // namespace

TEST_CASE("start-at reads RFC 3339 with Z or an offset and epoch seconds with a fraction") {
  CHECK(parse_start_at("2026-12-01T10:00:00Z") == 1796119200 * kSecond);
  CHECK(parse_start_at("2026-12-01T11:00:00+01:00") == 1796119200 * kSecond);
  CHECK(parse_start_at("2026-12-01T09:30:00.25-00:30") == 1796119200 * kSecond + kSecond / 4);
  CHECK(parse_start_at("2024-02-29t00:00:00.000000001z") == 1709164800 * kSecond + 1);
  CHECK(parse_start_at("1796119200") == 1796119200 * kSecond);
  CHECK(parse_start_at("1796119200.5") == 1796119200 * kSecond + kSecond / 2);
  CHECK(format_rfc3339(1796119200 * kSecond + kSecond / 4) == "2026-12-01T10:00:00.250000000Z");
  CHECK(parse_start_at(format_rfc3339(1709164800 * kSecond + 123)) == 1709164800 * kSecond + 123);
}

TEST_CASE("start-at refuses a time without a zone and impossible dates, naming the form") {
  for (const char* bad : {"2026-12-01T10:00:00", "2026-13-01T10:00:00Z", "2025-02-29T10:00:00Z",
                          "2026-12-01T24:00:00Z", "2026-12-01T10:00:00+1", "tomorrow", "",
                          "1796119200.", "1796119200s", "2026-12-01T10:00:00Z trailing"}) {
    INFO(bad);
    try {
      parse_start_at(bad);
      FAIL("accepted");
    } catch (const std::invalid_argument& e) {
      CHECK_THAT(e.what(), Catch::Contains("--start-at") && Catch::Contains("RFC 3339"));
    }
  }
}

TEST_CASE("start-at may be up to a second in the past but not more") {
  auto at = 1796119200 * kSecond;
  CHECK_NOTHROW(check_start_at(at, at - 30 * kSecond));
  CHECK_NOTHROW(check_start_at(at, at + kSecond));
  CHECK_THROWS_WITH(check_start_at(at, at + 3 * kSecond), Catch::Contains("3.000 s in the past"));
}

TEST_CASE("a shard's open-loop arrivals are those of the whole trace") {
  LoadedTrace input;
  for (std::uint64_t i = 0; i < 10; ++i) {
    auto& e = input.exchanges.emplace_back();
    e.id = i;
    e.request.method = "POST";
    e.request.target = "/v1/completions";
  }
  Options whole;
  whole.schedule.kind = ScheduleKind::rate;
  whole.schedule.rate = 10;
  whole.seed = 3;
  auto global = arrival_offsets_ns(10, whole.schedule, whole.seed);
  for (std::size_t shard = 0; shard < 3; ++shard) {
    Options options = whole;
    options.shard_index = shard;
    options.shard_count = 3;
    auto chosen = select_exchanges(input.exchanges, options, false);
    std::vector<Prepared> prepared(chosen.size());
    for (std::size_t i = 0; i < chosen.size(); ++i) prepared[i].input_index = chosen[i];
    auto chains = make_chains(input, prepared, options);
    REQUIRE(chains.size() == chosen.size());
    for (std::size_t c = 0; c < chains.size(); ++c)
      CHECK(chains[c].start_ns == global[input.exchanges[prepared[chains[c].items[0]].input_index].id]);
  }
}

TEST_CASE("a shard's recorded timing keeps the offsets from the whole trace's first send") {
  LoadedTrace input;
  for (std::int64_t i = 0; i < 6; ++i) {
    auto& e = input.exchanges.emplace_back();
    e.request.method = "POST";
    e.actual_send_ns = (i + 1) * 100;
  }
  Options options;
  options.schedule.kind = ScheduleKind::recorded;
  options.shard_index = 1;
  options.shard_count = 2;
  auto chosen = select_exchanges(input.exchanges, options, false);
  std::vector<Prepared> prepared(chosen.size());
  for (std::size_t i = 0; i < chosen.size(); ++i) prepared[i].input_index = chosen[i];
  auto chains = make_chains(input, prepared, options);
  REQUIRE(chains.size() == 3);
  CHECK(chains[0].start_ns == 100);  // exchange 1, at 200, is 100 after exchange 0
  CHECK(chains[2].start_ns == 500);
}

TEST_CASE("shards of a windowed recorded run with capped idle gaps keep the unsharded times") {
  LoadedTrace input;
  for (std::int64_t at : {0, 100, 5000, 5100, 20000, 20050, 90000}) {  // ms
    auto& e = input.exchanges.emplace_back();
    e.request.method = "POST";
    e.actual_send_ns = at * 1'000'000;
  }
  Options options;
  options.schedule.kind = ScheduleKind::recorded;
  options.window_from = std::chrono::milliseconds(100);
  options.window_to = std::chrono::milliseconds(60000);
  options.max_idle_gap = std::chrono::milliseconds(1000);
  auto offsets_of = [&](std::size_t index, std::size_t count) {
    Options shard = options;
    shard.shard_index = index;
    shard.shard_count = count;
    auto chosen = select_exchanges(input.exchanges, shard, false);
    std::vector<Prepared> prepared(chosen.size());
    for (std::size_t i = 0; i < chosen.size(); ++i) prepared[i].input_index = chosen[i];
    std::map<std::size_t, std::int64_t> out;  // input index -> intended offset
    for (const auto& chain : make_chains(input, prepared, shard))
      for (std::size_t k = 0; k < chain.items.size(); ++k)
        out[prepared[chain.items[k]].input_index] = chain.offsets_ns[k];
    return out;
  };
  auto whole = offsets_of(0, 1);
  CHECK(whole == std::map<std::size_t, std::int64_t>{{1, 0},
                                                     {2, 1'000'000'000},
                                                     {3, 1'100'000'000},
                                                     {4, 2'100'000'000},
                                                     {5, 2'150'000'000}});
  std::map<std::size_t, std::int64_t> joined;
  for (std::size_t shard = 0; shard < 2; ++shard) joined.merge(offsets_of(shard, 2));
  CHECK(joined == whole);
}

TEST_CASE("merge joins every shard once and says the total concurrency and each shard's facts") {
  TempDir dir;
  for (std::size_t i = 0; i < 3; ++i) write_shard(dir / ("s" + std::to_string(i)), i, 3, 4, 4, "A", 2);
  auto result = merge_shards({dir / "s2", dir / "s0", dir / "s1"}, dir / "out");
  CHECK(result.exchanges == 12);
  CHECK(result.missing == 0);
  CHECK(result.total_concurrency == 6);
  auto merged = load_trace(dir / "out");
  REQUIRE(merged.exchanges.size() == 12);
  for (std::size_t k = 0; k < 12; ++k) {
    CHECK(merged.exchanges[k].id == k);
    CHECK(*merged.exchanges[k].source_id == k);  // completion order across shards
    CHECK(*merged.exchanges[k].label("run") == "out");
    CHECK(*merged.exchanges[k].label("concurrency") == "6");
  }
  auto settings = json::parse(merged.header.settings).as_object();
  CHECK(settings.at("schedule").at("concurrency") == 6);
  CHECK_FALSE(settings.contains("shard"));
  auto& shards = settings.at("shards").as_array();
  REQUIRE(shards.size() == 3);
  CHECK(shards[2].at("host") == "host2");
  CHECK(shards[2].at("clock_offset_ns") == 1002);
  CHECK(shards[0].at("start_at") == "2025-12-01T10:00:00.000000000Z");
}

TEST_CASE("the merged header says the run's totals of per-shard figures and the shards' clock spread") {
  TempDir dir;
  auto per_shard = [](Options& options, ShardFacts& facts) {
    options.requests = 10;
    options.limit = 7;
    if (facts.host == "host1") facts.clock_offset_ns = 4'000'000;  // began 4 ms late
  };
  for (std::size_t i = 0; i < 3; ++i)
    write_shard(dir / ("s" + std::to_string(i)), i, 3, 10, 10, "A", 2, per_shard);
  auto result = merge_shards({dir / "s0", dir / "s1", dir / "s2"}, dir / "out");
  REQUIRE(result.clock_offset_spread_ns);
  CHECK(*result.clock_offset_spread_ns == 4'000'000 - 1000);
  auto merged = load_trace(dir / "out");
  auto settings = json::parse(merged.header.settings).as_object();
  CHECK(settings.at("requests") == 30);
  CHECK(settings.at("requests_per_shard") == 10);
  CHECK(settings.at("limit") == 21);
  CHECK(settings.at("limit_per_shard") == 7);
  CHECK(settings.at("clock_offset_spread_ns") == 4'000'000 - 1000);
  CHECK(report::header_from_trace(merged.header).schedule == "concurrency 6, 3 shards, 30 requests");
}

TEST_CASE("the clock spread needs two shards that recorded an offset") {
  TempDir dir;
  auto unfinished = [](Options&, ShardFacts& facts) {
    if (facts.host == "host1") facts.clock_offset_ns.reset();
  };
  for (std::size_t i = 0; i < 2; ++i) write_shard(dir / ("s" + std::to_string(i)), i, 2, 1, 1, "A", 1, unfinished);
  auto result = merge_shards({dir / "s0", dir / "s1"}, dir / "out");
  CHECK_FALSE(result.clock_offset_spread_ns);
  CHECK_FALSE(json::parse(load_trace(dir / "out").header.settings).as_object().contains("clock_offset_spread_ns"));
}

TEST_CASE("the live tool turns of the shards of a live run are summed and do not refuse the merge") {
  TempDir dir;
  for (std::size_t i = 0; i < 2; ++i)
    write_shard(dir / ("s" + std::to_string(i)), i, 2, 1, 1, "A", 1, {}, [i](metrics::RunSettings& settings) {
      settings.live_tool_turns = metrics::LiveToolTurns{"the rule", 3 + i, 1};
    });
  merge_shards({dir / "s0", dir / "s1"}, dir / "out");
  auto settings = json::parse(load_trace(dir / "out").header.settings).as_object();
  const auto& turns = settings.at("live_tool_turns").as_object();
  CHECK(turns.at("substituted") == 7);
  CHECK(turns.at("kept_as_recorded") == 2);
  CHECK(turns.at("rule") == "the rule");
}

TEST_CASE("merge names the shards that left no output and refuses duplicate shards") {
  TempDir dir;
  for (std::size_t i = 0; i < 4; ++i) write_shard(dir / ("s" + std::to_string(i)), i, 4, 1, 1);
  auto result = merge_shards({dir / "s0", dir / "s2"}, dir / "absent");
  CHECK(result.shard_count == 4);
  CHECK(result.absent_shards == std::vector<std::size_t>{1, 3});
  CHECK(result.shards.size() == 2);
  CHECK(load_trace(dir / "absent").exchanges.size() == 2);
  CHECK_THAT(refusal({dir / "s0", dir / "s1", dir / "s1", dir / "s2", dir / "s3"}, dir / "out"),
             Catch::Contains("shard 1/4 is given twice"));
}

TEST_CASE("merge refuses shards of another trace, another shard count or other settings") {
  TempDir dir;
  write_shard(dir / "a0", 0, 2, 1, 1, "A");
  write_shard(dir / "b1", 1, 2, 1, 1, "B");
  write_shard(dir / "c1", 1, 3, 1, 1, "A");
  write_shard(dir / "d1", 1, 2, 1, 1, "A", 5);
  CHECK_THAT(refusal({dir / "a0", dir / "b1"}, dir / "out"), Catch::Contains("replays a different trace"));
  CHECK_THAT(refusal({dir / "a0", dir / "c1"}, dir / "out"), Catch::Contains("is shard 1/3"));
  CHECK_THAT(refusal({dir / "a0", dir / "d1"}, dir / "out"), Catch::Contains("differ in: schedule"));
  TraceHeader plain;
  plain.source = Source::replayed;
  plain.settings = "{}";
  TraceWriter(dir / "plain", plain).close();
  CHECK_THAT(refusal({dir / "plain"}, dir / "out"), Catch::Contains("is a whole replay, not one shard of several"));
}

TEST_CASE("merge of a run of one shard says it is a whole replay that needs no merge") {
  TempDir dir;
  Options options;
  options.target = "http://127.0.0.1:1";
  TraceHeader header;
  header.source = Source::replayed;
  header.settings = to_json(run_settings(options));  // --shard 0/1: replay records no shard facts
  TraceWriter(dir / "whole", header).close();
  CHECK_THAT(refusal({dir / "whole"}, dir / "out"),
             Catch::Contains("is a whole replay (--shard 0/1), not one shard of several: it needs no merge"));
  TraceHeader recorded;
  recorded.source = Source::recorded;
  TraceWriter(dir / "recorded", recorded).close();
  CHECK_THAT(refusal({dir / "recorded"}, dir / "out"), Catch::Contains("is not a replay's output (its source is recorded)"));
}

TEST_CASE("merge refuses a crafted start time whose shift would overflow the common clock") {
  TempDir dir;
  auto start_at = [](std::int64_t ns) {
    return [ns](Options&, ShardFacts& facts) { facts.start_at_ns = ns; };
  };
  write_shard(dir / "s0", 0, 2, 2, 2, "A", 1, start_at(0));
  write_shard(dir / "s1", 1, 2, 2, 2, "A", 1, start_at(INT64_MAX));
  CHECK_THAT(refusal({dir / "s0", dir / "s1"}, dir / "out"),
             Catch::Contains("do not fit on the common clock"));
  write_shard(dir / "n1", 1, 2, 2, 2, "A", 1, start_at(INT64_MIN));
  CHECK_THAT(refusal({dir / "s0", dir / "n1"}, dir / "out"), Catch::Contains("is before 1970"));
}

TEST_CASE("merge counts the exchanges a shard selected but does not hold") {
  TempDir dir;
  write_shard(dir / "s0", 0, 2, 5, 5);
  write_shard(dir / "s1", 1, 2, 2, 5);
  auto result = merge_shards({dir / "s0", dir / "s1"}, dir / "out");
  CHECK(result.exchanges == 7);
  CHECK(result.missing == 3);
  CHECK(result.shards[1].missing() == 3);
  CHECK(result.shards[0].missing() == 0);
}

TEST_CASE("merge names the missing exchanges by source id from the source trace, and refuses another") {
  TempDir dir;
  TraceHeader header;
  header.source = Source::imported;
  header.created_unix_ns = 42;
  {
    TraceWriter writer(dir / "src", header);
    for (std::uint64_t id = 0; id < 6; ++id) {
      Exchange e;
      e.id = id;
      e.request.method = "POST";
      e.request.body = std::to_string(id);
      e.key = request_key("POST", "/", e.request.body);
      writer.write(e);
    }
  }
  auto identity = input_identity(load_trace(dir / "src"));
  auto same_trace = [&](Options&, ShardFacts& facts) { facts.input_identity = identity; };
  write_shard(dir / "s0", 0, 2, 3, 3, "", 1, same_trace);
  write_shard(dir / "s1", 1, 2, 1, 3, "", 1, same_trace);  // holds source id 1 of 1, 3, 5
  MergeOptions options;
  options.source_trace = dir / "src";
  auto result = merge_shards({dir / "s0", dir / "s1"}, dir / "out", options);
  CHECK(result.missing == 2);
  CHECK(result.shards[0].missing_ids.empty());
  CHECK(result.shards[1].missing_ids == std::vector<std::uint64_t>{3, 5});

  write_shard(dir / "t0", 0, 2, 3, 3, "A");
  write_shard(dir / "t1", 1, 2, 3, 3, "A");
  try {
    merge_shards({dir / "t0", dir / "t1"}, dir / "out2", options);
    FAIL("merged shards of another trace with it");
  } catch (const MergeRefused& e) {
    CHECK_THAT(e.what(), Catch::Contains("is not the trace the shards replayed"));
  }
  CHECK_FALSE(std::filesystem::exists(dir / "out2"));
}
