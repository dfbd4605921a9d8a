#include "report/replay_report.hpp"

#include <boost/json.hpp>
#include <cstdio>

namespace retrace::report {
namespace {

std::string format(const char* pattern, double value) {
  char text[64];
  std::snprintf(text, sizeof text, pattern, value);
  return text;
}

std::string latency_row(std::string_view name, const replay::Percentiles& p) {
  std::string row = "  ";
  row += name;
  row.append(name.size() < 22 ? 22 - name.size() : 1, ' ');
  if (p.count == 0) return row + "-\n";
  char text[160];
  std::snprintf(text, sizeof text, "%9.2f %9.2f %9.2f %9.2f   (n=%zu)\n", p.p50, p.p90, p.p99,
                p.max, p.count);
  return row + text;
}

boost::json::object percentiles_json(const replay::Percentiles& p) {
  boost::json::object out;
  out["count"] = p.count;
  out["p50"] = p.p50;
  out["p90"] = p.p90;
  out["p99"] = p.p99;
  out["max"] = p.max;
  out["mean"] = p.mean;
  return out;
}

}  // namespace

std::string render_stats_text(const replay::Stats& stats, const StatsContext& context) {
  std::string out;
  if (!context.title.empty()) out += context.title + "\n";
  if (context.interrupted) out += "  (interrupted: partial run)\n";
  out += "  requests            " + std::to_string(stats.exchanges) + "\n";
  if (stats.not_sent > 0)
    out += "  never sent          " + std::to_string(stats.not_sent) +
           "  (a plan, e.g. an imported trace: replay it to measure)\n";
  if (stats.not_sent < stats.exchanges || stats.exchanges == 0)
    out += "  completed           " + std::to_string(stats.completed) + "\n";
  std::size_t error_count = 0;
  for (const auto& [kind, count] : stats.errors_by_kind) error_count += count;
  out += "  errors              " + std::to_string(error_count);
  if (!stats.errors_by_kind.empty()) {
    out += "  (";
    bool first = true;
    for (const auto& [kind, count] : stats.errors_by_kind) {
      if (!first) out += ", ";
      first = false;
      out += kind + " " + std::to_string(count);
    }
    out += ")";
  }
  out += "\n";
  if (stats.retried > 0)
    out += "  retried             " + std::to_string(stats.retried) +
           "  (sent again on a fresh connection: the server had closed a keep-alive one)\n";
  out += "  duration            " + format("%.3f s", stats.duration_s) + "\n";
  out += "  requests/s          " + format("%.2f", stats.requests_per_s) + "\n";
  out += "  output tokens       " + std::to_string(stats.output_tokens) +
         (stats.output_tokens_source.empty() ? "" : "  (" + stats.output_tokens_source + ")") + "\n";
  out += "  output tokens/s     " + format("%.1f", stats.output_tokens_per_s) + "\n";
  if (stats.goodput_per_s) {
    out += "  goodput             " + format("%.2f req/s", *stats.goodput_per_s);
    if (stats.slo_met)
      out += "  (" + std::to_string(*stats.slo_met) + " of " + std::to_string(stats.completed) +
             " met the SLO)";
    out += "\n";
  }
  if (!stats.other_requests.empty()) {
    out += "  not inference       ";
    std::size_t shown = 0;
    for (const auto& [endpoint, count] : stats.other_requests)
      out += (shown++ ? ", " : "") + endpoint + " " + std::to_string(count);
    out += "  (not counted above)\n";
  }
  out += "  latency (ms)              p50       p90       p99       max\n";
  out += latency_row("TTFT", stats.ttft);
  out += latency_row("inter-token", stats.itl);
  out += latency_row("TPOT", stats.tpot);
  out += latency_row("end-to-end", stats.e2e);
  if (stats.open_loop) {
    out += "  from the intended send (corrected for coordinated omission):\n";
    out += latency_row("TTFT", stats.ttft_intended);
    out += latency_row("end-to-end", stats.e2e_intended);
    out += latency_row("schedule slip", stats.schedule_slip);
  }
  return out;
}

std::string render_stats_json(const replay::Stats& stats, const StatsContext& context) {
  boost::json::object out;
  if (!context.title.empty()) out["title"] = context.title;
  out["interrupted"] = context.interrupted;
  out["exchanges"] = stats.exchanges;
  out["completed"] = stats.completed;
  out["not_sent"] = stats.not_sent;
  boost::json::object others;
  for (const auto& [endpoint, count] : stats.other_requests) others[endpoint] = count;
  out["other_requests"] = std::move(others);
  boost::json::object errors;
  for (const auto& [kind, count] : stats.errors_by_kind) errors[kind] = count;
  out["errors"] = std::move(errors);
  out["retried"] = stats.retried;
  out["duration_s"] = stats.duration_s;
  out["requests_per_s"] = stats.requests_per_s;
  out["output_tokens"] = stats.output_tokens;
  out["output_tokens_source"] = stats.output_tokens_source;
  out["output_tokens_per_s"] = stats.output_tokens_per_s;
  out["ttft_ms"] = percentiles_json(stats.ttft);
  out["itl_ms"] = percentiles_json(stats.itl);
  out["tpot_ms"] = percentiles_json(stats.tpot);
  out["e2e_ms"] = percentiles_json(stats.e2e);
  out["open_loop"] = stats.open_loop;
  if (stats.open_loop) {
    out["ttft_intended_ms"] = percentiles_json(stats.ttft_intended);
    out["e2e_intended_ms"] = percentiles_json(stats.e2e_intended);
    out["schedule_slip_ms"] = percentiles_json(stats.schedule_slip);
  }
  if (stats.goodput_per_s) out["goodput_per_s"] = *stats.goodput_per_s;
  if (stats.slo_met) out["slo_met"] = *stats.slo_met;
  return boost::json::serialize(out);
}

std::string join_json_reports(const std::vector<std::string>& reports) {
  if (reports.size() == 1) return reports.front() + "\n";
  std::string out = "[";
  for (std::size_t i = 0; i < reports.size(); ++i) {
    if (i) out += ",";
    out += reports[i];
  }
  return out + "]\n";
}

}  // namespace retrace::report
