#include "report/replay_report.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include <boost/json.hpp>

#include "report/client.hpp"
#include "report/text.hpp"

namespace retrace::report {

namespace json = boost::json;

namespace {

// One latency figure of the report, in the order every format prints them.
struct LatencyRow {
  std::string_view label;     // terminal and Markdown
  std::string_view json_key;  // JSON
  const metrics::Percentiles* values;
};

std::vector<LatencyRow> latency_rows(const metrics::Stats& stats) {
  std::vector<LatencyRow> rows{{"TTFT", "ttft_ms", &stats.ttft},
                               {"inter-token", "itl_ms", &stats.itl},
                               {"TPOT", "tpot_ms", &stats.tpot},
                               {"end-to-end", "e2e_ms", &stats.e2e}};
  // Apart from TTFT only where it can differ: some exchange reasoned.
  if (stats.reasoning_tokens) rows.insert(rows.begin() + 1, {"TTFOT (answer)", "ttfot_ms", &stats.ttfot});
  if (stats.open_loop) {
    rows.push_back({"TTFT (intended)", "ttft_intended_ms", &stats.ttft_intended});
    rows.push_back({"e2e (intended)", "e2e_intended_ms", &stats.e2e_intended});
    rows.push_back({"schedule slip", "schedule_slip_ms", &stats.schedule_slip});
  }
  // Where the server said its own TTFT or queue time (format 1.6).
  if (stats.ttft_minus_server.count > 0)
    rows.push_back({"TTFT − server's", "ttft_minus_server_ms", &stats.ttft_minus_server});
  if (stats.queue_share.count > 0)
    rows.push_back({"queue % of TTFT", "queue_share_of_ttft_pct", &stats.queue_share});
  return rows;
}

// The columns of a latency row: the percentiles asked for, then max, mean and stddev.
std::vector<std::string> column_names(const StatsContext& context) {
  std::vector<std::string> names;
  for (double percent : context.percentiles) names.push_back(percentile_name(percent));
  names.insert(names.end(), {"max", "mean", "stddev"});
  return names;
}

std::vector<double> column_values(const metrics::Percentiles& p, const StatsContext& context) {
  std::vector<double> values;
  for (double percent : context.percentiles) values.push_back(p.at(percent));
  values.insert(values.end(), {p.max, p.mean, p.stddev});
  return values;
}

// The sample count, and for percentiles read from a histogram (past a million samples:
// metrics/distribution.hpp) how close they are.
std::string sample_count(const metrics::Percentiles& p) {
  auto count = std::to_string(p.count);
  if (p.relative_error == 0) return count;
  char bound[32];
  std::snprintf(bound, sizeof bound, "%.3g", p.relative_error * 100);
  return count + ", percentiles within " + bound + " %";
}

std::string padded(std::string text, std::size_t width) {
  if (text.size() < width) text.append(width - text.size(), ' ');
  return text;
}

std::string right(std::string text, std::size_t width) {
  if (text.size() < width) text.insert(0, width - text.size(), ' ');
  return text;
}

std::size_t error_count(const metrics::Stats& stats) {
  std::size_t count = 0;
  for (const auto& [kind, n] : stats.errors_by_kind) count += n;
  return count;
}

std::string errors_detail(const metrics::Stats& stats) {
  std::string out;
  for (const auto& [kind, count] : stats.errors_by_kind)
    out += (out.empty() ? "" : ", ") + kind + " " + std::to_string(count);
  return out;
}

std::string input_tokens_text(const metrics::Stats& stats) {
  return stats.input_tokens ? std::to_string(*stats.input_tokens) : "unknown (no usage.prompt_tokens)";
}

// The figures every text format shows, as (name, value) pairs.
std::vector<std::pair<std::string, std::string>> figures(const metrics::Stats& stats) {
  std::vector<std::pair<std::string, std::string>> out;
  out.emplace_back("requests", std::to_string(stats.exchanges));
  if (stats.not_sent > 0)
    out.emplace_back("never sent", std::to_string(stats.not_sent) +
                                       "  (a plan, e.g. an imported trace: replay it to measure)");
  if (stats.not_sent < stats.exchanges || stats.exchanges == 0)
    out.emplace_back("completed", std::to_string(stats.completed));
  std::string errors = std::to_string(error_count(stats));
  if (!stats.errors_by_kind.empty()) errors += " (" + errors_detail(stats) + ")";
  out.emplace_back("errors", errors);
  if (stats.retried > 0)
    out.emplace_back("retried", std::to_string(stats.retried) +
                                    "  (sent again on a fresh connection: the server had closed a "
                                    "keep-alive one)");
  out.emplace_back("duration", fixed(stats.duration_s, 3) + " s");
  out.emplace_back("requests/s", fixed(stats.requests_per_s, 2));
  out.emplace_back("input tokens", input_tokens_text(stats));
  out.emplace_back("output tokens", std::to_string(stats.output_tokens) +
                                        (stats.output_tokens_source.empty()
                                             ? ""
                                             : "  (" + stats.output_tokens_source + ")"));
  if (stats.reasoning_tokens)
    out.emplace_back("reasoning tokens", std::to_string(*stats.reasoning_tokens) + "  (of the output tokens; " +
                                             stats.reasoning_tokens_source + ")");
  if (stats.input_tokens) out.emplace_back("input tokens/s", fixed(stats.input_tokens_per_s, 1));
  out.emplace_back("output tokens/s", fixed(stats.output_tokens_per_s, 1));
  if (stats.input_tokens) out.emplace_back("total tokens/s", fixed(stats.total_tokens_per_s, 1));
  out.emplace_back("in flight", "peak " + std::to_string(stats.peak_in_flight) + " · mean " +
                                    fixed(stats.mean_in_flight, 2));
  if (stats.goodput_per_s) {
    std::string goodput = fixed(*stats.goodput_per_s, 2) + " req/s";
    if (stats.slo_met)
      goodput += " (" + std::to_string(*stats.slo_met) + " of " + std::to_string(stats.completed) +
                 " met the SLO)";
    out.emplace_back("goodput", goodput);
  }
  if (stats.client) out.emplace_back("client", metrics::client_of(stats).line());
  if (!stats.other_requests.empty()) {
    std::string others;
    for (const auto& [endpoint, count] : stats.other_requests)
      others += (others.empty() ? "" : ", ") + endpoint + " " + std::to_string(count);
    out.emplace_back("not inference", others + "  (not counted above)");
  }
  return out;
}

json::value latency_json(const metrics::Percentiles& p, const StatsContext& context) {
  json::object out;
  out["count"] = p.count;
  auto value = [&](double v) { return p.count ? json::value(rounded(v, 3)) : json::value(nullptr); };
  for (double percent : context.percentiles) out[percentile_name(percent)] = value(p.at(percent));
  out["max"] = value(p.max);
  out["mean"] = value(p.mean);
  out["stddev"] = p.count > 1 ? json::value(rounded(p.stddev, 3)) : json::value(nullptr);
  // Only past a million samples: the percentiles' bound, as a fraction (metrics/distribution.hpp).
  if (p.relative_error > 0) out["relative_error"] = p.relative_error;
  return out;
}

}  // namespace

std::vector<double> parse_percentiles(std::string_view text) {
  std::vector<double> out;
  std::string_view rest = text;
  while (true) {
    auto comma = rest.find(',');
    auto item = rest.substr(0, comma);
    double value = 0;
    auto [end, error] = std::from_chars(item.data(), item.data() + item.size(), value);
    if (item.empty() || error != std::errc() || end != item.data() + item.size() || !(value > 0) ||
        value > 100)
      throw std::invalid_argument("--percentiles: '" + std::string(item) +
                                  "' is not a percentile in (0, 100]; give a comma-separated "
                                  "list, e.g. --percentiles 50,90,95,99");
    out.push_back(value);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return out;
}

std::string percentile_name(double percent) {
  char buffer[32];
  auto result = std::to_chars(buffer, buffer + sizeof buffer, percent, std::chars_format::fixed);
  return "p" + std::string(buffer, result.ptr);
}

std::string render_stats_text(const metrics::Stats& stats, const StatsContext& context) {
  constexpr std::size_t kName = 18, kColumn = 10;
  std::string out;
  if (!context.title.empty()) out += context.title + "\n";
  if (context.header) out += "  " + header_line(*context.header) + "\n";
  if (context.interrupted) out += "  (interrupted: partial run)\n";
  for (const auto& [name, value] : figures(stats)) out += "  " + padded(name, kName) + "  " + value + "\n";

  auto names = column_names(context);
  std::size_t table_width = 2 + kName + names.size() * kColumn + 10;
  if (context.width == 0 || table_width <= context.width) {
    out += "  " + padded("latency (ms)", kName);
    for (const auto& name : names) out += right(name, kColumn);
    out += "\n";
    for (const auto& row : latency_rows(stats)) {
      out += "  " + padded(std::string(row.label), kName);
      if (row.values->count == 0) {
        out += right("-", kColumn) + "\n";
        continue;
      }
      for (double value : column_values(*row.values, context)) out += right(fixed(value, 2), kColumn);
      out += "   (n=" + sample_count(*row.values) + ")\n";
    }
    return out;
  }
  // Too narrow for the table: one figure per line, wrapped nowhere.
  out += "  latency (ms)\n";
  for (const auto& row : latency_rows(stats)) {
    out += "    " + std::string(row.label) + " (n=" + sample_count(*row.values) + ")\n";
    if (row.values->count == 0) continue;
    auto values = column_values(*row.values, context);
    for (std::size_t i = 0; i < names.size(); ++i)
      out += "      " + padded(names[i], 8) + right(fixed(values[i], 2), kColumn) + "\n";
  }
  return out;
}

std::string render_stats_markdown(const metrics::Stats& stats, const StatsContext& context) {
  std::string out = "## " + (context.title.empty() ? std::string("retrace stats") : context.title) + "\n\n";
  if (context.header) out += header_line(*context.header) + "\n\n";
  if (context.interrupted) out += "**Interrupted: a partial run.**\n\n";
  out += "| figure | value |\n|---|---|\n";
  for (const auto& [name, value] : figures(stats)) out += "| " + name + " | " + value + " |\n";
  auto names = column_names(context);
  out += "\n| latency (ms) |";
  for (const auto& name : names) out += " " + name + " |";
  out += " n |\n|---|";
  for (std::size_t i = 0; i <= names.size(); ++i) out += "--:|";
  out += "\n";
  for (const auto& row : latency_rows(stats)) {
    out += "| " + std::string(row.label) + " |";
    for (double value : column_values(*row.values, context))
      out += " " + (row.values->count ? fixed(value, 2) : std::string("—")) + " |";
    out += " " + sample_count(*row.values) + " |\n";
  }
  return out;
}

std::string render_stats_json(const metrics::Stats& stats, const StatsContext& context) {
  json::object out;
  out["schema_version"] = kJsonSchemaVersion;
  out["title"] = context.title.empty() ? json::value(nullptr) : json::value(context.title);
  out["header"] = context.header ? json::value(header_json(*context.header)) : json::value(nullptr);
  out["interrupted"] = context.interrupted;
  out["exchanges"] = stats.exchanges;
  out["completed"] = stats.completed;
  out["not_sent"] = stats.not_sent;
  json::object others;
  for (const auto& [endpoint, count] : stats.other_requests) others[endpoint] = count;
  out["other_requests"] = std::move(others);
  json::object errors;
  for (const auto& [kind, count] : stats.errors_by_kind) errors[kind] = count;
  out["errors"] = std::move(errors);
  out["retried"] = stats.retried;
  out["duration_s"] = rounded(stats.duration_s, 9);
  out["requests_per_s"] = rounded(stats.requests_per_s, 3);
  out["input_tokens"] = stats.input_tokens ? json::value(*stats.input_tokens) : json::value(nullptr);
  out["output_tokens"] = stats.output_tokens;
  out["output_tokens_source"] = stats.output_tokens_source;
  out["reasoning_tokens"] = stats.reasoning_tokens ? json::value(*stats.reasoning_tokens) : json::value(nullptr);
  out["input_tokens_per_s"] =
      stats.input_tokens ? json::value(rounded(stats.input_tokens_per_s, 3)) : json::value(nullptr);
  out["output_tokens_per_s"] = rounded(stats.output_tokens_per_s, 3);
  out["total_tokens_per_s"] =
      stats.input_tokens ? json::value(rounded(stats.total_tokens_per_s, 3)) : json::value(nullptr);
  out["in_flight"] = json::object{{"peak", stats.peak_in_flight},
                                  {"mean", rounded(stats.mean_in_flight, 3)}};
  out["open_loop"] = stats.open_loop;
  for (const auto& row : latency_rows(stats)) out[row.json_key] = latency_json(*row.values, context);
  if (!stats.reasoning_tokens) out["ttfot_ms"] = nullptr;  // no reasoning: TTFT is the figure
  if (!stats.open_loop)  // measured from the intended send only in open loop: null, not absent
    for (auto key : {"ttft_intended_ms", "e2e_intended_ms", "schedule_slip_ms"}) out[key] = nullptr;
  out["goodput_per_s"] =
      stats.goodput_per_s ? json::value(rounded(*stats.goodput_per_s, 3)) : json::value(nullptr);
  out["slo_met"] = stats.slo_met ? json::value(*stats.slo_met) : json::value(nullptr);
  out["client"] = stats.client ? json::value(client_json(*stats.client)) : json::value(nullptr);
  return json_text(out);
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
