// Tests for the server's state beside each exchange (issue 42): metrics/server_join (the run's
// series at an exchange's send, first token and end, sample and hold, preemptions between) and
// metrics::StatsBuilder's client TTFT minus the server's and queue share of TTFT.
#include <catch2/catch.hpp>

#include "metrics/stats.hpp"
#include "metrics/server_join.hpp"

using namespace retrace;

namespace {

MetricScrape scrape(std::int64_t offset_ns, double running, double waiting, double preemptions) {
  MetricScrape out;
  out.offset_ns = offset_ns;
  out.values = {{"running", SeriesKind::gauge, running}, {"waiting", SeriesKind::gauge, waiting},
                {"kv_usage", SeriesKind::gauge, running / 10}};
  if (preemptions >= 0) out.values.push_back({"preemptions", SeriesKind::counter, preemptions});
  return out;
}

Exchange sent_at(std::int64_t send, std::int64_t first_byte, std::int64_t end) {
  Exchange exchange;
  exchange.actual_send_ns = send;
  exchange.first_byte_ns = first_byte;
  exchange.end_ns = end;
  return exchange;
}

}  // namespace

TEST_CASE("the join holds the latest scrape at or before each moment of an exchange") {
  metrics::ServerSeries series;
  series.add(scrape(0, 0, 0, 0));
  series.add(scrape(100, 4, 1, 2));
  MetricScrape failed;
  failed.offset_ns = 150;
  failed.note = "HTTP 500";
  series.add(failed);  // no values: not a sample
  series.add(scrape(200, 9, 3, 0));
  series.add(scrape(300, 2, 0, 5));

  auto state = series.join(sent_at(120, 90, 190));  // send 120, first token 210, end 310
  CHECK(state.at_send == ServerSample{100, 4, 1, 0.4});
  CHECK(state.at_first_token == ServerSample{200, 9, 3, 0.9});
  CHECK(state.at_end == ServerSample{300, 2, 0, 0.2});
  CHECK(state.preemptions == 5);  // the scrapes in (120, 310]: 0 and 5

  auto exact = series.join(sent_at(100, 50, 100));  // a scrape at the very send counts as before it
  CHECK(exact.at_send.scrape_ns == 100);
  CHECK(exact.preemptions == 0);
  CHECK_FALSE(series.join(sent_at(-5, 1, 2)).known());  // before the first scrape
}

TEST_CASE("a series without a preemptions counter joins preemptions as not known") {
  metrics::ServerSeries series;
  series.add(scrape(0, 1, 0, -1));
  series.add(scrape(100, 2, 0, -1));
  auto state = series.join(sent_at(50, 10, 100));
  CHECK(state.known());
  CHECK(state.preemptions == -1);
  CHECK(state.at_end.running == 2);
  CHECK_FALSE(metrics::ServerSeries{}.join(sent_at(0, 1, 2)).known());
}

TEST_CASE("stats give the client TTFT minus the server's queue and TTFT and the queue share where the server said them") {
  metrics::StatsBuilder builder(false);
  for (int i = 0; i < 4; ++i) {
    metrics::ExchangeMetrics m;
    m.streamed = true;
    m.actual_send_ns = i * 1'000'000;
    m.first_token_ns = 10'000'000;  // 10 ms
    m.end_ns = 20'000'000;
    m.output_tokens = {5, true};
    m.server_ttft_ms = 4;
    if (i < 3) m.server_queue_ms = 2.5;
    builder.add(m);
  }
  auto stats = std::move(builder).finish();
  REQUIRE(stats.ttft_minus_server.count == 4);
  CHECK(stats.ttft_minus_server.p50 == Approx(3.5));  // 10 − 4 − 2.5: vLLM's TTFT starts at scheduling
  CHECK(stats.ttft_minus_server.max == Approx(6));    // no queue said (llama.cpp's prompt_ms): 10 − 4
  REQUIRE(stats.queue_share.count == 3);
  CHECK(stats.queue_share.p50 == Approx(25));
  CHECK(stats.ttft.count == 4);
}
