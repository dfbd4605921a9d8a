// What the summaries gather one exchange at a time, so that a report or a sweep's summary reads
// each run as a stream: latency distributions for the charts, failed questions (the first few
// kept), the most severe divergences (the first few kept).
#include <algorithm>

#include "metrics/run_settings.hpp"
#include "report/sweep_summary.hpp"

namespace retrace::report {

void LatencySampler::add(const metrics::ExchangeMetrics& exchange) {
  if (exchange.error != ErrorKind::none) return;
  if (exchange.first_token_ns >= 0) ttft_.add(double(exchange.first_token_ns) / 1e6);
  if (exchange.end_ns >= 0) e2e_.add(double(exchange.end_ns) / 1e6);
  for (auto gap : exchange.token_gaps_ns) itl_.add(double(gap) / 1e6);
}

LatencySamples LatencySampler::finish() && {
  return {std::move(ttft_).percentiles(), std::move(itl_).percentiles(), std::move(e2e_).percentiles()};
}

LatencySamples latency_samples(const std::vector<metrics::ExchangeMetrics>& metrics) {
  LatencySampler sampler;
  for (const auto& exchange : metrics) sampler.add(exchange);
  return std::move(sampler).finish();
}

void FailedQuestions::add(const Exchange& exchange) {
  if (!exchange.expected) return;
  ++with_expected_;
  auto output = diff::output_text(exchange);
  if (diff::matches_expected(output, *exchange.expected, options_)) return;
  ++failed_;
  if (kept_.size() < keep_)
    kept_.push_back({exchange.source_id.value_or(exchange.id), *exchange.expected, std::move(output)});
}

StreamedRun stream_run(const std::filesystem::path& path, const diff::Options& options,
                       std::size_t keep_failed, const StreamSinks& sinks) {
  TraceReader reader(path);
  if (sinks.scrapes) reader.on_metrics(sinks.scrapes);
  metrics::StatsBuilder builder(metrics::is_open_loop(reader.header()));
  StreamedRun run{reader.header(), {}, FailedQuestions(options, keep_failed), {}};
  Exchange exchange;
  while (reader.next(exchange)) {
    if (sinks.prepare) sinks.prepare(exchange);
    run.questions.add(exchange);
    auto metrics = metrics::summarize(exchange);
    if (sinks.latency) sinks.latency->add(metrics);
    if (sinks.pooled) sinks.pooled->add(metrics, exchange.start_unix_ns);
    builder.add(std::move(metrics), exchange.start_unix_ns);
  }
  run.recovery = reader.recovery();
  run.stats = std::move(builder).finish();
  run.stats.client = metrics::run_settings_of(run.header.settings).client;
  return run;
}

void MostSevere::add(const DivergenceEntry& entry) {
  ++seen_;
  auto& kept = by_rank_[severity_rank(entry.divergence.classification)];
  if (kept.size() < at_most_) kept.push_back(entry);
}

std::vector<DivergenceEntry> MostSevere::take() && {
  std::vector<DivergenceEntry> out;
  for (auto& kept : by_rank_)
    for (auto& entry : kept) {
      if (out.size() == at_most_) return out;
      out.push_back(std::move(entry));
    }
  return out;
}

std::vector<DivergenceEntry> most_severe(const std::vector<DivergenceEntry>& entries, std::size_t at_most) {
  MostSevere picker(at_most);
  for (const auto& entry : entries) picker.add(entry);
  return std::move(picker).take();
}

}  // namespace retrace::report
