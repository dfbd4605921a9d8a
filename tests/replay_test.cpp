// Unit tests of replay/: option parsing, selection, body rewriting, arrival processes, statistics.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <numeric>
#include <thread>

#include "base/text.hpp"
#include "format/json.hpp"
#include "replay/flags.hpp"
#include "replay/preflight.hpp"
#include "replay/replay.hpp"
#include "report/replay_report.hpp"

using namespace retrace;
using namespace retrace::replay;
namespace json = boost::json;

namespace {

Exchange exchange_at(std::uint64_t id, std::string target, std::string session = {}) {
  Exchange e;
  e.id = id;
  e.request.method = "POST";
  e.request.target = std::move(target);
  e.session_id = std::move(session);
  return e;
}

// A completed streamed exchange: tokens arrive at `token_offsets_ms` after the send.
ExchangeMetrics streamed(std::int64_t intended_ms, std::int64_t actual_ms,
                         std::vector<std::int64_t> token_offsets_ms, std::int64_t end_ms) {
  Exchange e;
  e.request.method = "POST";
  e.request.target = "/v1/completions";
  e.intended_send_ns = intended_ms * 1'000'000;
  e.actual_send_ns = actual_ms * 1'000'000;
  e.end_ns = end_ms * 1'000'000;
  e.first_byte_ns = token_offsets_ms.empty() ? e.end_ns : token_offsets_ms.front() * 1'000'000;
  e.response.status = 200;
  e.response.streamed = true;
  Choice choice;
  for (auto offset : token_offsets_ms) {
    Token token;
    token.bytes = "x";
    token.offset_ns = offset * 1'000'000;
    choice.tokens.push_back(token);
  }
  e.choices.push_back(choice);
  return summarize(e);
}

}  // namespace

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

TEST_CASE("set writes JSON values at dotted paths - creating objects on the way") {
  auto body = R"({"model":"m","temperature":0.7,"messages":[{"role":"user","content":"hi"}]})";
  auto out = json::parse(apply_body_overrides(
      body,
      {{"temperature", "0"},
       {"stream_options.include_usage", "true"},
       {"messages.0.content", "hello there"},
       {"stop", "[\"\\n\"]"},
       {"user", "\"42\""}},
      {}));
  CHECK(out.at("temperature").as_int64() == 0);
  CHECK(out.at("stream_options").at("include_usage").as_bool());
  CHECK(out.at("messages").at(0).at("content").as_string() == "hello there");
  CHECK(out.at("stop").at(0).as_string() == "\n");
  CHECK(out.at("user").as_string() == "42");
  CHECK(out.at("model").as_string() == "m");
}

TEST_CASE("unset removes a path and ignores one that is absent") {
  auto body = R"({"model":"m","logprobs":true,"stream_options":{"include_usage":true,"x":1}})";
  auto out = json::parse(apply_body_overrides(
      body, {}, {"logprobs", "stream_options.include_usage", "not.there", "seed"}));
  CHECK_FALSE(out.as_object().contains("logprobs"));
  CHECK_FALSE(out.at("stream_options").as_object().contains("include_usage"));
  CHECK(out.at("stream_options").at("x").as_int64() == 1);
}

TEST_CASE("body overrides refuse bodies that are not JSON objects and paths through scalars") {
  CHECK_THROWS_AS(apply_body_overrides("not json", {{"a", "1"}}, {}), std::invalid_argument);
  CHECK_THROWS_AS(apply_body_overrides("[1,2]", {{"a", "1"}}, {}), std::invalid_argument);
  CHECK_THROWS_AS(apply_body_overrides(R"({"a":5})", {{"a.b", "1"}}, {}), std::invalid_argument);
  CHECK_THROWS_AS(apply_body_overrides(R"({"a":1})", {{"a..b", "1"}}, {}), std::invalid_argument);
  // No overrides: the bytes go out untouched, JSON or not.
  CHECK(apply_body_overrides("not json", {}, {}) == "not json");
}

TEST_CASE("live sessions replace the latest assistant messages with this run's answers") {
  auto body = R"({"messages":[{"role":"system","content":"s"},{"role":"assistant","content":"old0"},)"
              R"({"role":"user","content":"u1"},{"role":"assistant","content":"rec1"},)"
              R"({"role":"user","content":"u2"},{"role":"assistant","content":"rec2"},)"
              R"({"role":"user","content":"u3"}]})";
  auto out = json::parse(substitute_session_answers(body, {std::string("new1"), std::string("new2")}));
  auto& messages = out.at("messages").as_array();
  CHECK(messages[1].at("content").as_string() == "old0");  // before the replayed turns
  CHECK(messages[3].at("content").as_string() == "new1");
  CHECK(messages[5].at("content").as_string() == "new2");
  CHECK(messages[6].at("content").as_string() == "u3");
  // A failed turn keeps its recorded answer.
  auto kept = json::parse(substitute_session_answers(body, {std::nullopt, std::string("new2")}));
  CHECK(kept.at("messages").at(3).at("content").as_string() == "rec1");
  CHECK(substitute_session_answers(R"({"prompt":"x"})", {std::string("a")}) == R"({"prompt":"x"})");
}

TEST_CASE("live sessions send an answer cut inside a character as valid text") {
  auto body = R"({"messages":[{"role":"user","content":"u1"},{"role":"assistant","content":"rec1"},)"
              R"({"role":"user","content":"u2"}]})";
  // Token bytes of an answer stopped by max_tokens inside an emoji (F0 9F 98 80), and one with a
  // stray byte inside.
  const std::string cut = "ok \xF0\x9F\x98";
  const std::string stray = "a\xFF" "b";
  auto sent = substitute_session_answers(body, {cut});
  CHECK(is_valid_utf8(sent));
  CHECK(json::parse(sent).at("messages").at(1).at("content").as_string() == "ok ");
  sent = substitute_session_answers(body, {stray});
  CHECK(is_valid_utf8(sent));
  CHECK(json::parse(sent).at("messages").at(1).at("content").as_string() == "a\xEF\xBF\xBD" "b");
  // Whole characters pass as they are.
  sent = substitute_session_answers(body, {std::string("caf\xC3\xA9 \xF0\x9F\x98\x80")});
  CHECK(json::parse(sent).at("messages").at(1).at("content").as_string() == "caf\xC3\xA9 \xF0\x9F\x98\x80");
}

TEST_CASE("constant arrivals are evenly spaced at 1/rate") {
  Schedule schedule;
  schedule.kind = ScheduleKind::rate;
  schedule.rate = 4;
  schedule.arrival = Arrival::constant;
  auto offsets = arrival_offsets_ns(5, schedule, 7);
  CHECK(offsets == std::vector<std::int64_t>{0, 250'000'000, 500'000'000, 750'000'000, 1'000'000'000});
}

TEST_CASE("a rate so low that offsets would overflow is refused instead of wrapping") {
  Schedule schedule;
  schedule.kind = ScheduleKind::rate;
  schedule.arrival = Arrival::constant;
  for (double rate : {1e-300, 1e-10}) {
    schedule.rate = rate;
    CHECK_THROWS_WITH(arrival_offsets_ns(3, schedule, 7),
                      Catch::Contains("more than 100 years after the start"));
  }
  schedule.rate = 1e-6;  // one request every 11.6 days still fits
  auto offsets = arrival_offsets_ns(3, schedule, 7);
  CHECK(offsets == std::vector<std::int64_t>{0, 1'000'000'000'000'000, 2'000'000'000'000'000});
}

TEST_CASE("poisson arrivals with a fixed seed are reproducible and have the rate's statistics") {
  Schedule schedule;
  schedule.kind = ScheduleKind::rate;
  schedule.rate = 50;
  schedule.arrival = Arrival::poisson;
  constexpr std::size_t n = 20000;
  auto offsets = arrival_offsets_ns(n, schedule, 42);
  CHECK(offsets == arrival_offsets_ns(n, schedule, 42));
  CHECK(offsets != arrival_offsets_ns(n, schedule, 43));
  std::vector<double> gaps;
  for (std::size_t i = 1; i < n; ++i) gaps.push_back(static_cast<double>(offsets[i] - offsets[i - 1]) / 1e9);
  double mean = std::accumulate(gaps.begin(), gaps.end(), 0.0) / static_cast<double>(gaps.size());
  double variance = 0;
  for (double g : gaps) variance += (g - mean) * (g - mean);
  variance /= static_cast<double>(gaps.size() - 1);
  // Exponential gaps: mean 1/rate = 20 ms, coefficient of variation 1. Bounds are ~6 standard
  // errors wide for n = 20000, so a correct sampler fails with negligible probability.
  CHECK(mean == Approx(0.02).epsilon(0.05));
  CHECK(std::sqrt(variance) / mean == Approx(1.0).epsilon(0.06));
  // Counts in one-second windows are Poisson(50): mean 50, variance 50.
  std::vector<int> counts(static_cast<std::size_t>(offsets.back() / 1'000'000'000) , 0);
  for (auto t : offsets) {
    auto window = static_cast<std::size_t>(t / 1'000'000'000);
    if (window < counts.size()) ++counts[window];
  }
  double count_mean = std::accumulate(counts.begin(), counts.end(), 0.0) / static_cast<double>(counts.size());
  double count_variance = 0;
  for (int c : counts) count_variance += (c - count_mean) * (c - count_mean);
  count_variance /= static_cast<double>(counts.size() - 1);
  CHECK(count_mean == Approx(50).epsilon(0.05));
  CHECK(count_variance / count_mean == Approx(1.0).epsilon(0.3));
}

TEST_CASE("gamma arrivals keep the mean rate and burstiness below 1 makes gaps more variable") {
  Schedule schedule;
  schedule.kind = ScheduleKind::rate;
  schedule.rate = 10;
  schedule.arrival = Arrival::gamma;
  auto coefficient_of_variation = [&](double shape, double& mean) {
    schedule.burstiness = shape;
    auto offsets = arrival_offsets_ns(20000, schedule, 9);
    std::vector<double> gaps;
    for (std::size_t i = 1; i < offsets.size(); ++i)
      gaps.push_back(static_cast<double>(offsets[i] - offsets[i - 1]));
    mean = std::accumulate(gaps.begin(), gaps.end(), 0.0) / static_cast<double>(gaps.size());
    double variance = 0;
    for (double g : gaps) variance += (g - mean) * (g - mean);
    variance /= static_cast<double>(gaps.size() - 1);
    return std::sqrt(variance) / mean;
  };
  double mean = 0;
  // Gamma(k): coefficient of variation 1/sqrt(k).
  CHECK(coefficient_of_variation(0.25, mean) == Approx(2.0).epsilon(0.1));
  CHECK(mean == Approx(1e8).epsilon(0.08));
  CHECK(coefficient_of_variation(4, mean) == Approx(0.5).epsilon(0.06));
  CHECK(mean == Approx(1e8).epsilon(0.03));
}

TEST_CASE("percentiles use the nearest rank") {
  std::vector<double> values;
  for (int i = 100; i >= 1; --i) values.push_back(i);
  auto p = percentiles(values);
  CHECK(p.count == 100);
  CHECK(p.p50 == 50);
  CHECK(p.p90 == 90);
  CHECK(p.p99 == 99);
  CHECK(p.max == 100);
  CHECK(p.mean == Approx(50.5));
  std::vector<double> one{7};
  auto single = percentiles(one);
  CHECK(single.p50 == 7);
  CHECK(single.p99 == 7);
  std::vector<double> none;
  CHECK(percentiles(none).count == 0);
}

TEST_CASE("stats of synthetic exchanges: TTFT - ITL - TPOT - e2e - throughput and errors") {
  std::vector<ExchangeMetrics> metrics;
  // Sent at 0 ms; tokens at 10, 20, 40 ms; ends at 40 ms.
  metrics.push_back(streamed(0, 0, {10, 20, 40}, 40));
  // Sent at 60 ms (intended 50); tokens at 30, 30, 50; ends at 140 ms after the send.
  metrics.push_back(streamed(50, 60, {30, 30, 50}, 140));
  ExchangeMetrics failed;
  failed.error = ErrorKind::timeout;
  failed.actual_send_ns = 10'000'000;
  metrics.push_back(failed);
  auto stats = compute_stats(true, metrics);
  CHECK(stats.exchanges == 3);
  CHECK(stats.completed == 2);
  REQUIRE(stats.errors_by_kind.size() == 1);
  CHECK(stats.errors_by_kind[0] == std::pair<std::string, std::size_t>{"timeout", 1});
  CHECK(stats.output_tokens == 6);
  CHECK(stats.duration_s == Approx(0.2));  // 0 ms -> 60 + 140 ms
  CHECK(stats.requests_per_s == Approx(10));
  CHECK(stats.output_tokens_per_s == Approx(30));
  CHECK(stats.ttft.count == 2);
  CHECK(stats.ttft.max == Approx(30));
  CHECK(stats.ttft_intended.max == Approx(40));  // 30 ms + 10 ms slip
  CHECK(stats.e2e.max == Approx(140));
  CHECK(stats.e2e_intended.max == Approx(150));
  CHECK(stats.schedule_slip.max == Approx(10));
  // Gaps: 10, 20 (first); 20 (second; the coalesced pair is one event).
  CHECK(stats.itl.count == 3);
  CHECK(stats.itl.max == Approx(20));
  // TPOT: (40 - 10) / 2 = 15; (140 - 30) / 2 = 55.
  CHECK(stats.tpot.count == 2);
  CHECK(stats.tpot.p50 == Approx(15));
  CHECK(stats.tpot.max == Approx(55));
  CHECK_FALSE(stats.goodput_per_s);
}

TEST_CASE("goodput counts completed requests meeting every SLO - from the intended send in open loop") {
  std::vector<ExchangeMetrics> metrics;
  metrics.push_back(streamed(0, 0, {10, 20, 30}, 30));       // ttft 10, tpot 10
  metrics.push_back(streamed(0, 100, {10, 20, 30}, 30));     // slipped 100 ms
  metrics.push_back(streamed(200, 200, {10, 200, 400}, 400));  // tpot 195
  auto slo = parse_slo("ttft:50ms,tpot:50ms");
  auto open = compute_stats(true, metrics, slo);
  REQUIRE(open.slo_met);
  CHECK(*open.slo_met == 1);
  REQUIRE(open.goodput_per_s);
  CHECK(*open.goodput_per_s == Approx(1 / 0.6));
  auto closed = compute_stats(false, metrics, slo);
  CHECK(*closed.slo_met == 2);
}

TEST_CASE("stats of a trace header know open-loop runs from the settings") {
  TraceHeader header;
  header.source = Source::replayed;
  Options options;
  options.schedule.kind = ScheduleKind::rate;
  options.schedule.rate = 3;
  header.settings = settings_json(options);
  CHECK(is_open_loop(header));
  options.schedule.kind = ScheduleKind::concurrency;
  header.settings = settings_json(options);
  CHECK_FALSE(is_open_loop(header));
  header.source = Source::recorded;
  CHECK_FALSE(is_open_loop(header));
}

TEST_CASE("Open-loop and recorded-timing settings name no cap on requests in flight") {
  // Nothing caps them (the default closed-loop concurrency of 1 is not theirs): a run at peak 16
  // in flight once said "max_in_flight":1.
  Options options;
  for (auto kind : {ScheduleKind::recorded, ScheduleKind::rate}) {
    options.schedule.kind = kind;
    options.schedule.rate = 2;
    auto schedule = boost::json::parse(settings_json(options)).at("schedule").as_object();
    CHECK(schedule.at("kind").as_string() == to_string(kind));
    CHECK_FALSE(schedule.contains("max_in_flight"));
  }
}

TEST_CASE("settings never contain the API key or secret header values") {
  Options options;
  options.api_key = "sk-SECRET";
  options.api_key_env = "MY_KEY";
  options.headers = {{"Authorization", "Bearer SECRET2"}, {"X-Team", "blue"}};
  auto settings = settings_json(options);
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

TEST_CASE("stats count inference requests only and list the others apart") {
  std::vector<Exchange> exchanges(4);
  exchanges[0].request = {"POST", "/v1/chat/completions", {}, "{}"};
  exchanges[1].request = {"POST", "/v1/embeddings", {}, "{}"};
  exchanges[2].request = {"GET", "/v1/models", {}, ""};
  exchanges[3].request = {"GET", "/metrics?x=1", {}, ""};
  for (auto& exchange : exchanges) {
    exchange.response.status = 200;
    exchange.end_ns = 1'000'000;
  }
  exchanges[0].usage.completion_tokens = 7;
  auto stats = compute_stats(TraceHeader{}, exchanges);
  CHECK(stats.exchanges == 2);
  CHECK(stats.completed == 2);
  CHECK(stats.output_tokens == 7);
  using Count = std::pair<std::string, std::size_t>;
  CHECK(stats.other_requests == std::vector<Count>{{"GET /metrics", 1}, {"GET /v1/models", 1}});
  CHECK(stats.peak_in_flight == 2);  // the two GETs are not inference
}

TEST_CASE("stats of a trace that kept only wall-clock starts take the send offsets from them") {
  std::vector<Exchange> exchanges(4);
  const std::int64_t starts_ms[] = {1'000, 1'100, 1'300, 1'000};
  for (std::size_t i = 0; i < exchanges.size(); ++i) {
    exchanges[i].request = {"POST", "/v1/completions", {}, "{}"};
    exchanges[i].response.status = 200;
    exchanges[i].start_unix_ns = starts_ms[i] * 1'000'000;
    exchanges[i].end_ns = 50'000'000;
  }
  exchanges[3].request = {"GET", "/v1/models", {}, ""};  // not inference, yet its start counts too
  exchanges[3].start_unix_ns = 900'000'000;
  auto stats = compute_stats(TraceHeader{}, exchanges);
  CHECK(stats.completed == 3);
  CHECK(stats.duration_s == Approx(0.35));  // 1,000 ms to 1,350 ms, not 50 ms
  CHECK(stats.peak_in_flight == 1);        // one after another, not all at offset 0
  CHECK(stats.schedule_slip.max == 0);

  // One exchange with an offset of its own: the offsets are the trace's, nothing is derived.
  exchanges[1].actual_send_ns = 20'000'000;
  stats = compute_stats(TraceHeader{}, exchanges);
  CHECK(stats.duration_s == Approx(0.07));
  CHECK(stats.peak_in_flight == 3);
}

TEST_CASE("a plan never sent is counted as not sent rather than completed") {
  std::vector<Exchange> exchanges(3);
  for (auto& exchange : exchanges) exchange.request = {"POST", "/v1/completions", {}, "{}"};
  auto stats = compute_stats(TraceHeader{}, exchanges);
  CHECK(stats.exchanges == 3);
  CHECK(stats.not_sent == 3);
  CHECK(stats.completed == 0);
  CHECK(stats.duration_s == 0);
  auto text = retrace::report::render_stats_text(stats, {});
  CHECK(text.find("never sent") != std::string::npos);
  CHECK(text.find("completed") == std::string::npos);
}

TEST_CASE("output tokens are the server usage when present and counted tokens otherwise") {
  Exchange exchange;
  exchange.choices.resize(2);
  exchange.choices[0].tokens.resize(3);
  exchange.choices[1].tokens.resize(2);
  CHECK(output_tokens(exchange).count == 5);
  CHECK_FALSE(output_tokens(exchange).from_usage);
  exchange.usage.completion_tokens = 9;
  CHECK(output_tokens(exchange).count == 9);
  CHECK(output_tokens(exchange).from_usage);
  OutputTokenTally tally;
  CHECK(tally.source() == "counted");
  tally.add({9, true});
  CHECK(tally.source() == "server usage");
  tally.add({5, false});
  CHECK(tally.total == 14);
  CHECK(tally.source() == "server usage for 1 of 2, counted for the rest");
}

TEST_CASE("the JSON report carries every figure and fills the open-loop section only when open loop") {
  std::vector<ExchangeMetrics> metrics{streamed(0, 5, {10, 20}, 20)};
  auto stats = compute_stats(true, metrics, parse_slo("e2e:1s"));
  report::StatsContext context;
  context.title = "run";
  auto out = json::parse(report::render_stats_json(stats, context));
  CHECK(out.at("completed").to_number<std::uint64_t>() == 1);
  CHECK(out.at("ttft_ms").at("p50").to_number<double>() == Approx(10));
  CHECK(out.at("schedule_slip_ms").at("max").to_number<double>() == Approx(5));
  CHECK(out.at("goodput_per_s").is_number());
  auto closed = json::parse(report::render_stats_json(compute_stats(false, metrics), {}));
  CHECK(closed.at("schedule_slip_ms").is_null());
  CHECK(closed.at("goodput_per_s").is_null());
  context.interrupted = true;
  auto text = report::render_stats_text(stats, context);
  CHECK(text.find("interrupted") != std::string::npos);
  CHECK(text.find("schedule slip") != std::string::npos);
}

TEST_CASE("an exchange whose request cannot be sent is recorded as a protocol error and the run goes on") {
  // Beast refuses a header value over 64 KiB by throwing while the request is built; the other
  // two exchanges go to a loopback port where nothing listens.
  std::uint16_t port = 0;
  {
    boost::asio::io_context io;
    boost::asio::ip::tcp::acceptor acceptor(
        io, {boost::asio::ip::make_address("127.0.0.1"), 0});
    port = acceptor.local_endpoint().port();
  }
  LoadedTrace input;
  for (std::uint64_t id = 0; id < 3; ++id) {
    auto exchange = exchange_at(id, "/v1/completions");
    exchange.request.body = R"({"prompt":"hi","max_tokens":1})";
    input.exchanges.push_back(exchange);
  }
  input.exchanges[1].request.headers.push_back({"X-Large", std::string(70'000, 'a')});
  Options options;
  options.target = "http://127.0.0.1:" + std::to_string(port);
  options.threads = 1;
  // The preflight would stop at the dead port (as it should: tests/e2e/replay_preflight.sh); the
  // workers' own error recording is what this test is about.
  auto checked = std::make_shared<Preflight>();
  checked->url = net::parse_url(options.target);
  options.preflight = checked;
  auto dir = std::filesystem::temp_directory_path() /
             ("retrace-replay-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto out = dir / "run.rtrace";

  auto result = run_replay(input, options, out);

  auto written = load_trace(out);
  std::filesystem::remove_all(dir);
  REQUIRE(written.exchanges.size() == 3);
  CHECK(result.stats.exchanges == 3);
  for (const auto& exchange : written.exchanges) {
    REQUIRE(exchange.source_id);
    INFO("source " << *exchange.source_id << ": " << exchange.error.message);
    if (*exchange.source_id == 1) {
      CHECK(exchange.error.kind == ErrorKind::protocol);
      CHECK(exchange.error.message.find("field value too large") != std::string::npos);
    } else {
      CHECK(exchange.error.kind == ErrorKind::connect);
    }
  }
}

TEST_CASE("a run on a clock that does not move records every send at its exact instant") {
  // Replay measures on Options::clock: on a ManualClock that stands still, every intended and
  // actual send is at offset 0 and starts at the clock's wall time, exactly (a loopback port
  // where nothing listens: the exchanges fail to connect, their times are still recorded).
  std::uint16_t port = 0;
  {
    boost::asio::io_context io;
    boost::asio::ip::tcp::acceptor acceptor(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
    port = acceptor.local_endpoint().port();
  }
  LoadedTrace input;
  for (std::uint64_t id = 0; id < 4; ++id) input.exchanges.push_back(exchange_at(id, "/v1/completions"));
  const std::int64_t origin_ns = 1'767'225'600'000'000'000;  // 2026-01-01T00:00:00Z
  ManualClock clock(std::chrono::nanoseconds{0},
                    Clock::wall_time_point{std::chrono::duration_cast<Clock::wall_time_point::duration>(
                        std::chrono::nanoseconds{origin_ns})});
  Options options;
  options.target = "http://127.0.0.1:" + std::to_string(port);
  options.threads = 1;
  options.clock = &clock;
  auto checked = std::make_shared<Preflight>();
  checked->url = net::parse_url(options.target);
  options.preflight = checked;
  auto dir = std::filesystem::temp_directory_path() /
             ("retrace-replay-clock-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);

  run_replay(input, options, dir / "run.rtrace");

  auto written = load_trace(dir / "run.rtrace");
  std::filesystem::remove_all(dir);
  REQUIRE(written.exchanges.size() == 4);
  for (const auto& exchange : written.exchanges) {
    CHECK(exchange.error.kind == ErrorKind::connect);
    CHECK(exchange.intended_send_ns == 0);
    CHECK(exchange.actual_send_ns == 0);
    CHECK(exchange.start_unix_ns == origin_ns);
  }
}

namespace {

// An in-process HTTP server on a loopback port, on its own thread: every request gets `answer`
// as a JSON 200 (keep-alive), on as many connections as the client opens; it counts those to
// /v1/completions (a run also scrapes /metrics). Stops when destroyed.
class AnsweringServer {
 public:
  explicit AnsweringServer(std::string answer) : answer_(std::move(answer)) {
    accept();
    thread_ = std::thread([this] { io_.run(); });
  }
  ~AnsweringServer() {
    io_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(acceptor_.local_endpoint().port()); }
  std::size_t completions() const { return completions_; }

 private:
  struct Session {
    boost::asio::ip::tcp::socket socket;
    boost::beast::flat_buffer buffer;
    boost::beast::http::request<boost::beast::http::string_body> request;
    boost::beast::http::response<boost::beast::http::string_body> response;
  };
  void accept() {
    acceptor_.async_accept([this](boost::system::error_code ec, boost::asio::ip::tcp::socket socket) {
      if (ec) return;
      read(std::make_shared<Session>(Session{std::move(socket), {}, {}, {}}));
      accept();
    });
  }
  void read(std::shared_ptr<Session> session) {
    session->request = {};
    boost::beast::http::async_read(session->socket, session->buffer, session->request,
                                   [this, session](boost::system::error_code ec, std::size_t) {
                                     if (ec) return;  // the client closed the connection
                                     write(session);
                                   });
  }
  void write(std::shared_ptr<Session> session) {
    session->response = {boost::beast::http::status::ok, 11};
    session->response.set(boost::beast::http::field::content_type, "application/json");
    session->response.body() = answer_;
    session->response.keep_alive(true);
    session->response.prepare_payload();
    boost::beast::http::async_write(session->socket, session->response,
                                    [this, session](boost::system::error_code ec, std::size_t) {
                                      if (ec) return;
                                      if (session->request.target() == "/v1/completions") ++completions_;
                                      read(session);
                                    });
  }

  std::string answer_;
  boost::asio::io_context io_;
  boost::asio::ip::tcp::acceptor acceptor_{io_, {boost::asio::ip::make_address("127.0.0.1"), 0}};
  std::atomic<std::size_t> completions_{0};
  std::thread thread_;
};

}  // namespace

TEST_CASE("a run on a clock that does not move records a served exchange at its exact instants") {
  // The same stopped clock against a server that answers: the answer is decoded and kept, and
  // every time the run measured (send, first byte, end) is the clock's, exactly.
  AnsweringServer server(
      R"({"id":"c1","object":"text_completion","model":"m","choices":[{"index":0,"text":"hello",)"
      R"("finish_reason":"stop"}],"usage":{"prompt_tokens":2,"completion_tokens":1,"total_tokens":3}})");
  LoadedTrace input;
  for (std::uint64_t id = 0; id < 3; ++id) {
    input.exchanges.push_back(exchange_at(id, "/v1/completions"));
    input.exchanges.back().request.body = R"({"model":"m","prompt":"hi","max_tokens":1})";
  }
  const std::int64_t origin_ns = 1'767'225'600'000'000'000;  // 2026-01-01T00:00:00Z
  ManualClock clock(std::chrono::nanoseconds{0},
                    Clock::wall_time_point{std::chrono::duration_cast<Clock::wall_time_point::duration>(
                        std::chrono::nanoseconds{origin_ns})});
  Options options;
  options.target = server.url();
  options.threads = 1;
  options.stream = false;
  options.clock = &clock;
  auto checked = std::make_shared<Preflight>();
  checked->url = net::parse_url(options.target);
  options.preflight = checked;
  auto dir = std::filesystem::temp_directory_path() /
             ("retrace-replay-served-clock-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);

  run_replay(input, options, dir / "run.rtrace");

  auto written = load_trace(dir / "run.rtrace");
  std::filesystem::remove_all(dir);
  CHECK(server.completions() == 3);
  REQUIRE(written.exchanges.size() == 3);
  for (const auto& exchange : written.exchanges) {
    CHECK(exchange.error.kind == ErrorKind::none);
    CHECK(exchange.response.status == 200);
    REQUIRE(exchange.choices.size() == 1);
    CHECK(output_text(exchange.choices.front()) == "hello");
    CHECK(exchange.usage.completion_tokens == 1);
    CHECK(exchange.intended_send_ns == 0);
    CHECK(exchange.actual_send_ns == 0);
    CHECK(exchange.first_byte_ns == 0);
    CHECK(exchange.end_ns == 0);
    CHECK(exchange.start_unix_ns == origin_ns);
  }
}

// ---------------------------------------------------------------------------------------------
// Preflight: identifying the server from what it answers (samples as each server writes them:
// llama.cpp's from /work/shared/samples and tests/real, the others' from their protocol sources).

namespace {

net::Fetched answer(std::string body, std::string server = {}) {
  net::Fetched fetched;
  fetched.status = 200;
  fetched.body = std::move(body);
  fetched.server = std::move(server);
  return fetched;
}

net::Fetched not_found() {
  net::Fetched fetched;
  fetched.status = 404;
  fetched.body = "Not Found";
  return fetched;
}

Probes nothing_but(net::Fetched models) {
  Probes probes;
  probes.models = std::move(models);
  probes.version = probes.info = probes.props = probes.server_info = probes.model_info = not_found();
  return probes;
}

}  // namespace

TEST_CASE("preflight identifies llama.cpp by its Server header and reads its build from props") {
  auto probes = nothing_but(answer(
      R"({"models":[{"name":"tiny","model":"tiny"}],"object":"list","data":[{"id":"tiny-random-llama","object":"model","created":1,"owned_by":"llamacpp","meta":{}}]})",
      "llama.cpp"));
  probes.props = answer(R"({"default_generation_settings":{"n_ctx":2048},"total_slots":32,"build_info":"b1-de3ff81"})");
  auto server = identify(probes);
  CHECK(server.kind == "llama.cpp");
  CHECK(server.version == "b1-de3ff81");
  CHECK(server.evidence == "Server: llama.cpp");
  CHECK(served_models(probes.models) == std::vector<std::string>{"tiny-random-llama"});
}

TEST_CASE("preflight identifies vLLM and SGLang by owned_by and reads their versions") {
  auto vllm = nothing_but(answer(R"({"object":"list","data":[{"id":"facebook/opt-125m","object":"model","owned_by":"vllm","max_model_len":2048}]})", "uvicorn"));
  vllm.version = answer(R"({"version":"0.10.2"})");
  CHECK(identify(vllm).kind == "vllm");
  CHECK(identify(vllm).version == "0.10.2");

  auto sglang = nothing_but(answer(R"({"object":"list","data":[{"id":"qwen/qwen2.5-0.5b-instruct","object":"model","owned_by":"sglang"}]})"));
  sglang.server_info = answer(R"({"version":"0.5.2","model_path":"qwen/qwen2.5-0.5b-instruct"})");
  CHECK(identify(sglang).kind == "sglang");
  CHECK(identify(sglang).version == "0.5.2");

  auto native_sglang = nothing_but(not_found());
  native_sglang.model_info = answer(R"({"model_path":"qwen/qwen2.5-0.5b-instruct","is_generation":true})");
  CHECK(identify(native_sglang).kind == "sglang");
}

TEST_CASE("preflight identifies TGI by the router its info names") {
  auto probes = nothing_but(answer(R"({"object":"list","data":[{"id":"tgi","object":"model","created":0,"owned_by":"bigscience/bloom-560m"}]})"));
  probes.info = answer(R"({"model_id":"bigscience/bloom-560m","max_input_tokens":1024,"router":"text-generation-router","version":"3.3.6"})");
  CHECK(identify(probes).kind == "tgi");
  CHECK(identify(probes).version == "3.3.6");
}

TEST_CASE("preflight calls any other models list openai-compatible and falls back to text") {
  auto hosted = nothing_but(answer(R"({"object":"list","data":[{"id":"gpt-4o-mini","object":"model","owned_by":"system"}]})"));
  auto server = identify(hosted);
  CHECK(server.kind == "openai-compatible");
  CHECK(server.evidence == "/v1/models owned_by system");
  std::string reason;
  CHECK(token_ids_for(server, reason) == llm::TokenIdMode::off);
  CHECK_THAT(reason, Catch::Contains("--token-ids logprobs"));
  CHECK(identify(nothing_but(not_found())).kind == "unknown");
}

TEST_CASE("token ids auto asks each known server for the fields it understands") {
  std::string reason;
  auto mode_of = [&](std::string kind) {
    ServerIdentity server;
    server.kind = std::move(kind);
    return token_ids_for(server, reason);
  };
  CHECK(mode_of("vllm") == llm::TokenIdMode::vllm);
  CHECK(mode_of("llama.cpp") == llm::TokenIdMode::llamacpp);
  CHECK(mode_of("sglang") == llm::TokenIdMode::logprobs);
  CHECK(mode_of("tgi") == llm::TokenIdMode::logprobs);
  CHECK(mode_of("retrace-serve") == llm::TokenIdMode::logprobs);
}

TEST_CASE("the failure verdict tolerates up to the maximum error rate and says why beyond it") {
  CHECK_FALSE(failure_verdict(0, 20, 0).has_value());
  CHECK_FALSE(failure_verdict(1, 20, 0.05).has_value());
  auto verdict = failure_verdict(2, 20, 0.05);
  REQUIRE(verdict.has_value());
  CHECK_THAT(*verdict, Catch::Contains("2 of 20 requests failed"));
  CHECK(failure_verdict(20, 20, 0.99).has_value());
}
