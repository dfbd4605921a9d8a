// Tests for llm/exposition (the Prometheus text parser and the alias table), llm/server_metrics
// (pages made into a trace's scrape values: counters as deltas, resets said), and the scrape
// record's round trip through a trace (format 1.5) beside exchanges, skipped by next().
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <unistd.h>

#include "format/trace.hpp"
#include "format/trace_copy.hpp"
#include "llm/exposition.hpp"
#include "llm/server_metrics.hpp"

using namespace retrace;
using namespace retrace::llm;

namespace {

const MetricValue* find(const MetricScrape& scrape, std::string_view series) {
  for (const auto& value : scrape.values)
    if (value.series == series) return &value;
  return nullptr;
}

}  // namespace

TEST_CASE("exposition parser reads every sample type with its family's type") {
  auto page = parse_exposition(
      "# HELP vllm:num_requests_running Number of requests running.\n"
      "# TYPE vllm:num_requests_running gauge\n"
      "vllm:num_requests_running{model_name=\"m\"} 3.0\n"
      "# TYPE vllm:num_preemptions counter\n"
      "vllm:num_preemptions_total{model_name=\"m\"} 7\n"
      "# TYPE ttft histogram\n"
      "ttft_bucket{le=\"0.1\"} 2\n"
      "ttft_bucket{le=\"+Inf\"} 5\n"
      "ttft_sum 1.5e-1\n"
      "ttft_count 5\n"
      "# TYPE lat summary\n"
      "lat{quantile=\"0.5\"} 0.2\n"
      "lat_count 9\n"
      "plain 1\n");
  REQUIRE(page.malformed == 0);
  REQUIRE(page.samples.size() == 9);
  CHECK(page.samples[0].type == MetricType::gauge);
  CHECK(page.samples[0].labels == std::vector<std::pair<std::string, std::string>>{{"model_name", "m"}});
  CHECK(page.samples[1].type == MetricType::counter);
  CHECK(page.samples[2].type == MetricType::histogram);
  CHECK(page.samples[3].labels[0].second == "+Inf");
  CHECK(page.samples[4].value == Approx(0.15));
  CHECK(page.samples[6].type == MetricType::summary);
  CHECK(page.samples[8].type == MetricType::untyped);
}

TEST_CASE("exposition parser without distributions skips histogram and summary samples unread") {
  std::string page_text =
      "# TYPE vllm:num_requests_running gauge\n"
      "vllm:num_requests_running{model_name=\"m\"} 3\n"
      "# TYPE ttft histogram\n"
      "ttft_bucket{le=\"0.1\"} 2\n"
      "ttft_bucket{le=\"+Inf\" 5\n"  // malformed, but never read
      "ttft_count 5\n"
      "# TYPE lat summary\n"
      "lat{quantile=\"0.5\"} 0.2\n"
      "lat_sum 9\n"
      "# TYPE served counter\n"
      "served_total 4\n"
      "plain 1\n";
  auto page = parse_exposition(page_text, kMaxPageSamples, false);
  CHECK(page.malformed == 0);
  CHECK(page.skipped == 5);
  REQUIRE(page.samples.size() == 3);
  CHECK(page.samples[0].name == "vllm:num_requests_running");
  CHECK(page.samples[1].name == "served_total");
  CHECK(page.samples[2].name == "plain");
  auto whole = parse_exposition(page_text);
  CHECK(whole.malformed == 1);
  CHECK(whole.samples.size() == 7);
}

TEST_CASE("exposition parser unescapes label values and series_name escapes them again") {
  auto page = parse_exposition("x{path=\"a\\\\b\",say=\"\\\"hi\\\"\",lines=\"1\\n2\",} 1\n");
  REQUIRE(page.malformed == 0);
  REQUIRE(page.samples.size() == 1);
  const auto& labels = page.samples[0].labels;
  CHECK(labels[0].second == "a\\b");
  CHECK(labels[1].second == "\"hi\"");
  CHECK(labels[2].second == "1\n2");
  auto name = series_name(page.samples[0]);
  CHECK(name == "x{path=\"a\\\\b\",say=\"\\\"hi\\\"\",lines=\"1\\n2\"}");
  auto again = parse_exposition(name + " 2");
  REQUIRE(again.samples.size() == 1);
  CHECK(again.samples[0].labels == labels);
}

TEST_CASE("exposition parser reads NaN and infinities and timestamps and skips comments") {
  auto page = parse_exposition(
      "# a comment\n\n   \n# EOF\n"
      "a NaN\nb +Inf\nc -Inf 1700000000000\nd 4 1700000000.5\n");
  REQUIRE(page.malformed == 0);
  REQUIRE(page.samples.size() == 4);
  CHECK(std::isnan(page.samples[0].value));
  CHECK(page.samples[1].value == std::numeric_limits<double>::infinity());
  CHECK(page.samples[2].value == -std::numeric_limits<double>::infinity());
  CHECK(page.samples[2].timestamp_ms == 1700000000000);
  CHECK(page.samples[3].timestamp_ms == 1700000000500);
  CHECK_FALSE(page.samples[0].timestamp_ms);
}

TEST_CASE("exposition parser names malformed lines with their line number and keeps the rest") {
  auto page = parse_exposition(
      "good 1\n"
      "9bad 1\n"
      "x{a=\"unclosed} 1\n"
      "y{a=b} 1\n"
      "z notanumber\n"
      "w 1 2 3\n"
      "v{a=\"\\q\"} 1\n"
      "# TYPE\n"
      "fine 2\n");
  CHECK(page.samples.size() == 2);
  CHECK(page.malformed == 7);
  REQUIRE(page.errors.size() == kMaxNamedErrors);
  CHECK(page.errors[0].rfind("line 2: ", 0) == 0);
  CHECK(page.errors[1].rfind("line 3: x: ", 0) == 0);
  CHECK(page.errors[2].find("line 4: y: label a's value is not quoted") == 0);
  CHECK(page.errors[3].find("line 5: z: 'notanumber' is not a number") == 0);
  CHECK(page.errors[4].find("line 6: w:") == 0);
}

TEST_CASE("exposition parser keeps at most max_samples samples and counts the rest") {
  std::string text;
  for (int i = 0; i < 100; ++i) text += "s" + std::to_string(i) + " 1\n";
  auto page = parse_exposition(text, 10);
  CHECK(page.samples.size() == 10);
  CHECK(page.dropped == 90);
}

TEST_CASE("every engine's names map to the normalised series") {
  auto alias = [](std::string line) {
    auto page = parse_exposition(line + " 1");
    REQUIRE(page.samples.size() == 1);
    auto found = alias_of(page.samples[0]);
    return found ? std::string(found->series) : std::string("(raw)");
  };
  CHECK(alias("vllm:num_requests_running{model_name=\"m\"}") == "running");
  CHECK(alias("vllm:gpu_cache_usage_perc") == "kv_usage");
  CHECK(alias("vllm:kv_cache_usage_perc") == "kv_usage");
  CHECK(alias("vllm:num_preemptions_total") == "preemptions");
  CHECK(alias("vllm:prefix_cache_hits_total") == "prefix_cache_hits");
  CHECK(alias("vllm:spec_decode_num_accepted_tokens_total") == "spec_decode_accepted_tokens");
  CHECK(alias("sglang:num_running_reqs") == "running");
  CHECK(alias("sglang:num_queue_reqs") == "waiting");
  CHECK(alias("sglang:token_usage") == "kv_usage");
  CHECK(alias("sglang:cache_hit_rate") == "prefix_cache_hit_rate");
  CHECK(alias("tgi_queue_size") == "waiting");
  CHECK(alias("tgi_batch_current_size") == "running");
  CHECK(alias("llamacpp:requests_processing") == "running");
  CHECK(alias("llamacpp:kv_cache_usage_ratio") == "kv_usage");
  CHECK(alias("nv_trt_llm_request_metrics{request_type=\"scheduled\"}") == "running");
  CHECK(alias("nv_trt_llm_request_metrics{request_type=\"max\"}") == "(raw)");
  CHECK(alias("retrace_sim_requests_waiting{model_name=\"retrace-sim\"}") == "waiting");
  CHECK(alias("something_else") == "(raw)");
}

TEST_CASE("counters become deltas and a reset counts from zero and is said") {
  SeriesDeltas deltas;
  auto page = [](double preemptions, double raw) {
    return parse_exposition("# TYPE vllm:num_preemptions counter\nvllm:num_preemptions_total " +
                            std::to_string(preemptions) + "\n# TYPE other_total counter\nother_total " +
                            std::to_string(raw) + "\nvllm:num_requests_running{e=\"0\"} 2\n"
                            "vllm:num_requests_running{e=\"1\"} 3\nvllm:kv_cache_usage_perc{e=\"0\"} 0.25\n"
                            "vllm:kv_cache_usage_perc{e=\"1\"} 0.75\n");
  };
  MetricScrape first, second, third;
  deltas.take(page(10, 5), first);
  REQUIRE(find(first, "preemptions"));
  CHECK(find(first, "preemptions")->value == 0);
  CHECK(find(first, "preemptions")->kind == SeriesKind::counter);
  CHECK(find(first, "other_total")->value == 0);
  CHECK(find(first, "running")->value == 5);     // summed over engines
  CHECK(find(first, "kv_usage")->value == 0.5);  // a fraction: averaged
  CHECK(first.note.empty());
  deltas.take(page(14, 5), second);
  CHECK(find(second, "preemptions")->value == 4);
  CHECK_FALSE(find(second, "other_total"));  // did not move: left out
  deltas.take(page(3, 6), third);
  CHECK(find(third, "preemptions")->value == 3);
  CHECK(find(third, "other_total")->value == 1);
  CHECK(third.note.find("counter reset") != std::string::npos);
  CHECK(third.note.find("preemptions") != std::string::npos);
}

TEST_CASE("a scrape says its malformed lines and keeps no NaN") {
  SeriesDeltas deltas;
  MetricScrape scrape;
  deltas.take(parse_exposition("ok 1\nbroken{ 2\nnan_one NaN\n"), scrape);
  CHECK(scrape.values.size() == 1);
  CHECK(scrape.note.find("1 malformed line skipped (line 2: ") != std::string::npos);
  CHECK(scrape.note.find("1 NaN or infinite values not kept") != std::string::npos);
}

TEST_CASE("scrape records round trip through a trace beside exchanges and next skips them") {
  auto path = std::filesystem::temp_directory_path() / ("exposition_test_" + std::to_string(::getpid()) + ".rtrace");
  MetricScrape scrape;
  scrape.offset_ns = -1500;
  scrape.took_ns = 900;
  scrape.in_flight = 4;
  scrape.values = {{"running", SeriesKind::gauge, 3}, {"preemptions", SeriesKind::counter, 2}};
  scrape.note = "1 malformed line skipped";
  {
    TraceWriter writer(path, TraceHeader{});
    writer.write(scrape);
    Exchange exchange;
    exchange.id = 0;
    exchange.in_flight_at_send = 3;
    exchange.in_flight_max = 9;
    writer.write(exchange);
    writer.write(MetricScrape{});
    writer.close();
  }
  TraceReader plain(path);
  Exchange read;
  REQUIRE(plain.next(read));
  CHECK(read.in_flight_at_send == 3);
  CHECK(read.in_flight_max == 9);
  CHECK_FALSE(plain.next(read));

  TraceReader reader(path);
  std::vector<MetricScrape> scrapes;
  reader.on_metrics([&](const MetricScrape& one) { scrapes.push_back(one); });
  ExchangeOutputs outputs;
  REQUIRE(reader.next(outputs));
  CHECK(outputs.in_flight_at_send == 3);
  CHECK_FALSE(reader.next(outputs));
  REQUIRE(scrapes.size() == 2);
  CHECK(scrapes[0] == scrape);
  CHECK(scrapes[1] == MetricScrape{});

  // Copied under a new header (what replay does at the end), frames byte for byte.
  auto copy = path;
  copy += ".copy";
  REQUIRE(copy_trace_with_header(path, copy, TraceHeader{}));
  TraceReader copied(copy);
  std::size_t copied_scrapes = 0;
  copied.on_metrics([&](const MetricScrape&) { ++copied_scrapes; });
  std::size_t exchanges = 0;
  while (copied.next(read)) ++exchanges;
  CHECK(exchanges == 1);
  CHECK(copied_scrapes == 2);
  std::filesystem::remove(path);
  std::filesystem::remove(copy);
}

TEST_CASE("a series listed twice on one page keeps its first value and no counter moves on a page read again") {
  // The fuzz target's finding: the second listing read as a reset on every page.
  auto page = parse_exposition("# TYPE a counter\na_total{x=\"y\"} 2e3\na_total{x=\"y\"} 1e3\n");
  SeriesDeltas deltas;
  MetricScrape first, second;
  deltas.take(page, first);
  deltas.take(page, second);
  CHECK(first.values.size() == 1);
  CHECK(first.note.find("1 repeated series not kept") != std::string::npos);
  CHECK(second.values.empty());
  CHECK(second.note.find("counter reset") == std::string::npos);
}
