// base/prometheus.hpp: the one writer of Prometheus' text format 0.0.4.
#include "base/prometheus.hpp"

#include <catch2/catch.hpp>

#include <limits>

#include "sim/metrics.hpp"

using namespace retrace;

TEST_CASE("A family opens with its HELP and TYPE lines before its samples") {
  PrometheusText text;
  text.family("retrace_record_exchanges_total", "counter", "Exchanges that ended, by outcome.");
  text.sample("retrace_record_exchanges_total", {{"outcome", "recorded"}}, std::uint64_t{1027});
  text.sample("retrace_record_exchanges_total", {{"outcome", "cut"}}, std::uint64_t{0});
  CHECK(text.text() ==
        "# HELP retrace_record_exchanges_total Exchanges that ended, by outcome.\n"
        "# TYPE retrace_record_exchanges_total counter\n"
        "retrace_record_exchanges_total{outcome=\"recorded\"} 1027\n"
        "retrace_record_exchanges_total{outcome=\"cut\"} 0\n");
}

TEST_CASE("A sample without labels has no braces and several labels are joined by commas") {
  PrometheusText text;
  text.sample("up", {}, std::uint64_t{1});
  text.sample("x", {{"a", "1"}, {"b", "2"}}, std::uint64_t{18446744073709551615ull});
  CHECK(text.text() == "up 1\nx{a=\"1\",b=\"2\"} 18446744073709551615\n");
}

TEST_CASE("Label values escape backslash and double quote and line feed") {
  PrometheusText text;
  text.sample("m", {{"model_name", "a\\b\"c\nd"}}, std::uint64_t{2});
  CHECK(text.text() == "m{model_name=\"a\\\\b\\\"c\\nd\"} 2\n");
}

TEST_CASE("HELP text escapes backslash and line feed but not double quote") {
  PrometheusText text;
  text.family("m", "gauge", "say \"hi\" \\ then\nmore");
  CHECK(text.text() == "# HELP m say \"hi\" \\\\ then\\nmore\n# TYPE m gauge\n");
}

TEST_CASE("Doubles are written in their shortest exact form and infinities and NaN as the format spells them") {
  PrometheusText text;
  text.sample("a", {}, 0.25);
  text.sample("b", {}, 1e-9);
  text.sample("c", {}, std::numeric_limits<double>::infinity());
  text.sample("d", {}, -std::numeric_limits<double>::infinity());
  text.sample("e", {}, std::numeric_limits<double>::quiet_NaN());
  text.sample("f", {}, 3.0);
  CHECK(text.text() == "a 0.25\nb 1e-09\nc +Inf\nd -Inf\ne NaN\nf 3\n");
}

TEST_CASE("retrace serve's metrics are written by the shared writer with the model name escaped") {
  sim::Metrics metrics;
  metrics.requests_served = 7;
  auto text = metrics.prometheus("odd\"name");
  CHECK(text.find("# HELP retrace_sim_requests_served_total Requests completed.\n"
                  "# TYPE retrace_sim_requests_served_total counter\n"
                  "retrace_sim_requests_served_total{model_name=\"odd\\\"name\"} 7\n") != std::string::npos);
}
