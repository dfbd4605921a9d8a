// Unit tests of replay/'s flags and settings: durations, SLOs, shards and filters, headers and
// assignments, repeat paths, what the settings keep, the failure verdict.
#include <catch2/catch.hpp>

#include <boost/json.hpp>
#include <filesystem>

#include "replay/flags.hpp"
#include "replay/replay.hpp"
#include "tests/replay_exchanges.hpp"

using namespace retrace;
using namespace retrace::replay;
namespace json = boost::json;

TEST_CASE("durations parse with ns - us - ms - s - m and h units") {
  CHECK(parse_duration("200ms", "--x") == std::chrono::milliseconds(200));
  CHECK(parse_duration("1.5s", "--x") == std::chrono::milliseconds(1500));
  CHECK(parse_duration("250us", "--x") == std::chrono::microseconds(250));
  CHECK(parse_duration("7ns", "--x") == std::chrono::nanoseconds(7));
  CHECK(parse_duration("2m", "--x") == std::chrono::minutes(2));
  CHECK(parse_duration("1h", "--x") == std::chrono::hours(1));
  CHECK(parse_duration(" 30s ", "") == std::chrono::seconds(30));
  CHECK_THROWS_AS(parse_duration("fast", "--x"), std::invalid_argument);
  CHECK_THROWS_AS(parse_duration("10 parsecs", "--x"), std::invalid_argument);
  CHECK_THROWS_AS(parse_duration("", "--x"), std::invalid_argument);
}

TEST_CASE("a bare number is refused with a hint naming the flag and both readings") {
  CHECK_THROWS_WITH(parse_duration("40", "--duration"),
                    "--duration '40': give a unit, e.g. 40s or 40ms (a bare number could mean either)");
  CHECK_THROWS_WITH(parse_duration("2", ""), Catch::Matchers::StartsWith("'2': give a unit"));
  CHECK_THROWS_WITH(parse_duration("5x", "--timeout"),
                    Catch::Matchers::Contains("--timeout '5x': unknown unit 'x'"));
  CHECK_THROWS_WITH(parse_duration("1e400s", "--timeout"),
                    Catch::Matchers::StartsWith("--timeout '1e400s'"));
}

TEST_CASE("an SLO names ttft - tpot and e2e limits and rejects anything else") {
  auto slo = parse_slo("ttft:200ms,tpot:50ms");
  REQUIRE(slo.ttft);
  CHECK(*slo.ttft == std::chrono::milliseconds(200));
  REQUIRE(slo.tpot);
  CHECK(*slo.tpot == std::chrono::milliseconds(50));
  CHECK_FALSE(slo.e2e);
  CHECK(parse_slo("e2e:2s").e2e == std::chrono::seconds(2));
  CHECK_THROWS_AS(parse_slo("latency:5ms"), std::invalid_argument);
  CHECK_THROWS_AS(parse_slo("ttft=5ms"), std::invalid_argument);
  CHECK_THROWS_AS(parse_slo("ttft:soon"), std::invalid_argument);
  CHECK_THROWS_WITH(parse_slo("ttft:15"), Catch::Matchers::Contains("--slo ttft '15': give a unit"));
  CHECK_THROWS_AS(parse_slo(""), std::invalid_argument);
}

TEST_CASE("an SLO's ttft limit in TPOTs is a positive number of the request's own TPOT") {
  auto slo = parse_slo("ttft:16tpot,e2e:2s");
  REQUIRE(slo.ttft_tpots);
  CHECK(*slo.ttft_tpots == 16);
  CHECK_FALSE(slo.ttft);
  CHECK(slo.e2e == std::chrono::seconds(2));
  CHECK(slo.any());
  CHECK(*parse_slo("ttft:2.5tpot").ttft_tpots == 2.5);
  auto both = parse_slo("ttft:500ms,ttft:8tpot");
  CHECK((both.ttft == std::chrono::milliseconds(500) && both.ttft_tpots == 8.0));
  for (auto bad : {"e2e:16tpot", "tpot:2tpot", "ttft:tpot", "ttft:0tpot", "ttft:-1tpot", "ttft:1e999tpot", "ttft:x2tpot"})
    CHECK_THROWS_WITH(parse_slo(bad), Catch::Matchers::Contains("a limit in TPOTs is a positive number of them on ttft"));
}

TEST_CASE("a shard is I/N with I below N") {
  CHECK(parse_shard("0/4") == std::pair<std::size_t, std::size_t>{0, 4});
  CHECK(parse_shard("3/4") == std::pair<std::size_t, std::size_t>{3, 4});
  CHECK_THROWS_AS(parse_shard("4/4"), std::invalid_argument);
  CHECK_THROWS_AS(parse_shard("1/0"), std::invalid_argument);
  CHECK_THROWS_AS(parse_shard("1-4"), std::invalid_argument);
  CHECK_THROWS_AS(parse_shard("a/b"), std::invalid_argument);
}

TEST_CASE("shards partition the exchanges: every one is in exactly one shard") {
  std::vector<Exchange> exchanges;
  for (std::uint64_t i = 0; i < 23; ++i) exchanges.push_back(exchange_at(i, "/v1/completions"));
  std::vector<int> seen(exchanges.size(), 0);
  for (std::size_t shard = 0; shard < 4; ++shard) {
    Options options;
    options.shard_index = shard;
    options.shard_count = 4;
    for (auto index : select_exchanges(exchanges, options, false)) {
      CHECK(index % 4 == shard);
      ++seen[index];
    }
  }
  for (int count : seen) CHECK(count == 1);
}

TEST_CASE("sharding by session keeps each session whole in one shard") {
  std::vector<Exchange> exchanges;
  for (std::uint64_t i = 0; i < 12; ++i)
    exchanges.push_back(exchange_at(i, "/v1/chat/completions", "s" + std::to_string(i % 3)));
  Options options;
  options.shard_count = 3;
  for (std::size_t shard = 0; shard < 3; ++shard) {
    options.shard_index = shard;
    auto chosen = select_exchanges(exchanges, options, true);
    REQUIRE(chosen.size() == 4);
    for (auto index : chosen) CHECK(exchanges[index].session_id == exchanges[chosen[0]].session_id);
  }
}

TEST_CASE("filters select by path glob - label and session and limit applies after them") {
  std::vector<Exchange> exchanges{exchange_at(0, "/v1/completions"),
                                  exchange_at(1, "/v1/chat/completions?x=1"),
                                  exchange_at(2, "/v1/chat/completions", "alpha"),
                                  exchange_at(3, "/health")};
  exchanges[2].labels.push_back({"tier", "gold"});
  Options options;
  options.filters = {"path:/v1/chat/*"};
  CHECK(select_exchanges(exchanges, options, false) == std::vector<std::size_t>{1, 2});
  options.filters = {"label:tier=gold"};
  CHECK(select_exchanges(exchanges, options, false) == std::vector<std::size_t>{2});
  options.filters = {"session:al*"};
  CHECK(select_exchanges(exchanges, options, false) == std::vector<std::size_t>{2});
  options.filters = {"path:/v1/*"};
  options.limit = 2;
  CHECK(select_exchanges(exchanges, options, false) == std::vector<std::size_t>{0, 1});
  CHECK_THROWS_AS(validate_filter("model:x"), std::invalid_argument);
  CHECK_THROWS_AS(validate_filter("label:tier"), std::invalid_argument);
}

TEST_CASE("A filter glob with an unclosed character class is refused with where it opened") {
  CHECK_THROWS_WITH(validate_filter("path:["),
                    Catch::Contains("the '[' at character 6 opens a character class that no ']' closes"));
  CHECK_THROWS_WITH(validate_filter("label:tier=go[ld"), Catch::Contains("character 14"));
  CHECK_THROWS_AS(validate_filter("session:[!]"), std::invalid_argument);
  CHECK_NOTHROW(validate_filter("path:/v1/[ch]*"));
  CHECK_NOTHROW(validate_filter("path:/v1/[]x]"));
  CHECK_NOTHROW(validate_filter("path:/v1/\\[x"));
}

TEST_CASE("A valid filter that matches none of the exchanges is refused with the count") {
  std::vector<Exchange> exchanges{exchange_at(0, "/v1/completions"), exchange_at(1, "/health")};
  Options options;
  options.filters = {"path:/v2/*"};
  CHECK_THROWS_WITH(select_exchanges(exchanges, options, false),
                    "--filter path:/v2/* matched none of the 2 exchanges; `retrace cat` shows their "
                    "paths, labels and sessions");
  options.filters = {"path:/v1/*", "path:/health"};
  CHECK_THROWS_WITH(select_exchanges(exchanges, options, false),
                    Catch::StartsWith("--filter path:/v1/* --filter path:/health matched none of the 2 "
                                      "exchanges (an exchange must match every --filter)"));
  // Nothing offered is not a filter's fault (an empty input is named where it is read), and a
  // filter that matches one exchange selects it.
  CHECK(select_exchanges({}, options, false).empty());
  options.filters = {"path:/health"};
  CHECK(select_exchanges(exchanges, options, false) == std::vector<std::size_t>{1});
}

TEST_CASE("Open-loop and recorded-timing settings name no cap on requests in flight") {
  // Nothing caps them (the default closed-loop concurrency of 1 is not theirs): a run at peak 16
  // in flight once said "max_in_flight":1.
  Options options;
  for (auto kind : {ScheduleKind::recorded, ScheduleKind::rate}) {
    options.schedule.kind = kind;
    options.schedule.rate = 2;
    auto schedule = boost::json::parse(to_json(run_settings(options))).at("schedule").as_object();
    CHECK(schedule.at("kind").as_string() == to_string(kind));
    CHECK_FALSE(schedule.contains("max_in_flight"));
  }
}

TEST_CASE("settings never contain the API key or secret header values") {
  Options options;
  options.api_key = "sk-SECRET";
  options.api_key_env = "MY_KEY";
  options.headers = {{"Authorization", "Bearer SECRET2"}, {"X-Team", "blue"}};
  auto settings = to_json(run_settings(options));
  CHECK(settings.find("SECRET") == std::string::npos);
  CHECK(settings.find("MY_KEY") != std::string::npos);
  CHECK(settings.find("X-Team: blue") != std::string::npos);
  CHECK(is_secret_header("x-API-key"));
  CHECK(is_secret_header("Cookie"));
  CHECK_FALSE(is_secret_header("Content-Type"));
}

TEST_CASE("headers and assignments parse strictly") {
  auto header = parse_header("X-Run:  nightly ");
  CHECK(header.name == "X-Run");
  CHECK(header.value == "nightly");
  CHECK_THROWS_AS(parse_header("no colon"), std::invalid_argument);
  CHECK_THROWS_AS(parse_header("Bad Name: v"), std::invalid_argument);
  CHECK(split_assignment("temperature=0", "--set") == std::pair<std::string, std::string>{"temperature", "0"});
  CHECK(split_assignment("a=b=c", "--set").second == "b=c");
  CHECK_THROWS_AS(split_assignment("=1", "--set"), std::invalid_argument);
}

TEST_CASE("repeat paths number the runs only when there are several") {
  CHECK(repeat_path("out/run.rtrace", 1, 1) == std::filesystem::path("out/run.rtrace"));
  CHECK(repeat_path("out/run.rtrace", 2, 3) == std::filesystem::path("out/run.r2.rtrace"));
  CHECK(repeat_path("run", 1, 2) == std::filesystem::path("run.r1.rtrace"));
}

TEST_CASE("the failure verdict tolerates up to the maximum error rate and says why beyond it") {
  CHECK_FALSE(failure_verdict(0, 20, 0).has_value());
  CHECK_FALSE(failure_verdict(1, 20, 0.05).has_value());
  auto verdict = failure_verdict(2, 20, 0.05);
  REQUIRE(verdict.has_value());
  CHECK_THAT(*verdict, Catch::Contains("2 of 20 requests failed"));
  CHECK(failure_verdict(20, 20, 0.99).has_value());
}
