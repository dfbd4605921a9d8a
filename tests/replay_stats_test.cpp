// Unit tests of a run's figures as replay and stats compute them: percentiles, TTFT, ITL, TPOT,
// goodput, open loop from the settings, inference requests apart, and the JSON report.
#include <catch2/catch.hpp>

#include <boost/json.hpp>
#include <vector>

#include "base/text.hpp"
#include "format/json.hpp"
#include "replay/replay.hpp"
#include "report/replay_report.hpp"

using namespace retrace;
using namespace retrace::replay;
namespace json = boost::json;

namespace {

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

TEST_CASE("a ttft limit in TPOTs compares each request's TTFT with its own TPOT") {
  std::vector<ExchangeMetrics> metrics;
  metrics.push_back(streamed(0, 0, {30, 40, 50}, 50));        // ttft 30, tpot 10: 3 TPOTs
  metrics.push_back(streamed(0, 0, {300, 400, 500}, 500));    // ttft 300, tpot 100: 3 TPOTs, 10 times slower
  metrics.push_back(streamed(0, 0, {40, 45, 50}, 50));        // ttft 40, tpot 5: 8 TPOTs
  metrics.push_back(streamed(0, 0, {30}, 30));                // one token: no TPOT, not met
  ExchangeMetrics whole;                                      // not streamed: no TTFT, not met
  whole.end_ns = 20'000'000;
  metrics.push_back(whole);
  auto stats = compute_stats(false, metrics, parse_slo("ttft:4tpot"));
  REQUIRE(stats.slo_met);
  CHECK(*stats.slo_met == 2);
  CHECK(*compute_stats(false, metrics, parse_slo("ttft:8tpot")).slo_met == 3);
  // With an absolute limit beside it, a request meets both.
  CHECK(*compute_stats(false, metrics, parse_slo("ttft:4tpot,ttft:100ms")).slo_met == 1);
}

TEST_CASE("stats of a trace header know open-loop runs from the settings") {
  TraceHeader header;
  header.source = Source::replayed;
  Options options;
  options.schedule.kind = ScheduleKind::rate;
  options.schedule.rate = 3;
  header.settings = to_json(run_settings(options));
  CHECK(is_open_loop(header));
  options.schedule.kind = ScheduleKind::concurrency;
  header.settings = to_json(run_settings(options));
  CHECK_FALSE(is_open_loop(header));
  header.source = Source::recorded;
  CHECK_FALSE(is_open_loop(header));
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
