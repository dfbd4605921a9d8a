// `sweep --csv` and the sweep's summary.csv: one row per level; the first column is named by the
// sweep's axis (concurrency, rate or speed). The client columns are the level's most loaded run's,
// empty where no run recorded its client.
#include "metrics/statistics.hpp"
#include "report/client.hpp"
#include "report/sweep_summary.hpp"
#include "report/text.hpp"

namespace retrace::report {

namespace {

std::string optional_count(const std::optional<std::size_t>& count) {
  return count ? std::to_string(*count) : "";
}

std::string optional_number(const std::optional<double>& value, int digits) {
  return value ? fixed(*value, digits) : "";
}

}  // namespace

std::string summary_to_csv(const Summary& summary) {
  std::vector<std::string> columns{summary.axis, "runs", "requests", "requests_per_s_mean", "requests_per_s_stddev",
       "requests_per_s_ci95_low", "requests_per_s_ci95_high", "output_tokens_per_s_mean",
       "output_tokens_per_s_stddev", "output_tokens_per_s_ci95_low", "output_tokens_per_s_ci95_high",
       "ttft_p50_ms", "ttft_p99_ms", "e2e_p50_ms", "e2e_p99_ms", "errors", "differing_requests",
       "differing_rate_upper95_pct", "near_tie_requests", "matches_expected_min",
       "matches_expected_max"};
  columns.insert(columns.end(), kClientCsvColumns.begin(), kClientCsvColumns.end());
  std::string out = csv_row(columns);
  for (const auto& level : summary.levels) {
    auto bound = clopper_pearson_upper(level.differing_requests, level.requests);
    auto latency = [](const metrics::Percentiles& p, double value) {
      return p.count ? fixed(value, 3) : std::string();
    };
    std::vector<std::string> fields{level_text(level.level), std::to_string(level.runs),
                    std::to_string(level.requests), fixed(level.requests_per_s.mean, 3),
                    fixed(level.requests_per_s.stddev, 3), optional_number(level.requests_per_s.ci_low, 3),
                    optional_number(level.requests_per_s.ci_high, 3),
                    fixed(level.output_tokens_per_s.mean, 3), fixed(level.output_tokens_per_s.stddev, 3),
                    optional_number(level.output_tokens_per_s.ci_low, 3),
                    optional_number(level.output_tokens_per_s.ci_high, 3),
                    latency(level.ttft, level.ttft.p50), latency(level.ttft, level.ttft.p99),
                    latency(level.e2e, level.e2e.p50), latency(level.e2e, level.e2e.p99),
                    std::to_string(level.errors), std::to_string(level.differing_requests),
                    bound ? rate_percent_text(*bound * 100, 2) : "", std::to_string(level.near_tie_requests),
                    optional_count(level.matches_min), optional_count(level.matches_max)};
    auto client = client_csv_fields(level.client);
    fields.insert(fields.end(), client.begin(), client.end());
    out += csv_row(fields);
  }
  return out;
}

}  // namespace retrace::report
