// Run headers as replay writes them, with the client's figures measured or (a trace older than
// that) not, and the lines the summaries print for them: what tests/sweep_summary_test.cpp and
// tests/study_test.cpp build summaries from.
#pragma once

#include <optional>
#include <string>
#include <utility>

#include "format/trace.hpp"
#include "metrics/run_settings.hpp"
#include "metrics/stats.hpp"

namespace retrace::test {

inline metrics::ClientUsage usage_of(double cpu_s, double wall_s, double busiest_s, unsigned threads, unsigned cores) {
  return {cpu_s, wall_s, busiest_s, threads, cores};
}
inline const metrics::ClientUsage kIdleClient = usage_of(0.76, 2.0, 0.6, 2, 2);       // 38 % of one core
inline const metrics::ClientUsage kSaturatedClient = usage_of(1.9, 2.0, 1.8, 2, 8);  // busiest thread 90 %
inline const std::string kIdleLine = "used 38 % of one core (busiest of 2 worker threads 30 %): not the bottleneck";
inline const std::string kSaturatedLine =
    "used 95 % of one core (busiest of 2 worker threads 90 %): it may have been the bottleneck (busy past 80 %): "
    "use more --threads, or a second client";

inline TraceHeader run_header(std::optional<metrics::ClientUsage> client, std::string schedule = "concurrency") {
  metrics::RunSettings settings;
  settings.command = "replay";
  settings.schedule.emplace().kind = std::move(schedule);
  settings.client = client;
  TraceHeader header;
  header.source = Source::replayed;
  header.settings = metrics::to_json(settings);
  return header;
}

// The client as a summary reads it back from a run's header.
inline metrics::RunClient client_from(const TraceHeader& header) {
  return metrics::client_of(metrics::compute_stats(header, {}));
}

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The line of `text` that starts with `start`; "" when none does.
inline std::string row_of(const std::string& text, const std::string& start) {
  auto at = text.find("\n" + start);
  if (at == std::string::npos) return "";
  auto end = text.find('\n', at + 1);
  return text.substr(at + 1, end == std::string::npos ? std::string::npos : end - at - 1);
}

}  // namespace retrace::test
