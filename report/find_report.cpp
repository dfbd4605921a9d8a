// A capacity search's summaries (report/find_summary.hpp): summary.json, summary.md, summary.csv,
// the terminal line per probe and the HTML page's model.
#include <boost/json.hpp>
#include <sstream>

#include "base/described_json.hpp"
#include "report/find_summary.hpp"
#include "report/svg.hpp"
#include "report/text.hpp"
#include "version.hpp"

namespace retrace::report {

namespace {

std::string percent(double fraction) { return fixed(fraction * 100, 1) + " %"; }

std::string optional_level(const std::optional<double>& level) { return level ? level_text(*level) : "—"; }

const FindProbe* probe_at(const FindSummary& summary, const std::optional<double>& level) {
  if (!level) return nullptr;
  for (const auto& probe : summary.probes)
    if (probe.level == *level && !probe.control) return &probe;
  return nullptr;
}

// "e2e ≤ 2000 ms: met by 86.0 % at 20 (p95 2417.3 ms)"; "ttft/tpot ≤ 16: met by 72.5 % at 5 (p90
// TTFT 812.3 ms)"
std::string binding_text(const FindSummary& summary) {
  const auto& binding = summary.answer.binding;
  const auto* probe = probe_at(summary, summary.answer.infeasible_min);
  if (!binding || !probe || probe->requests == 0) return "";
  if (binding->threshold_tpots)
    return binding->name + " ≤ " + fixed(*binding->threshold_tpots, 1) + ": met by " +
           percent(double(binding->met) / double(probe->requests)) + " at " + level_text(probe->level) + " (p" +
           fixed(summary.attainment * 100, 0) + " TTFT " + fixed(binding->observed_ms, 1) + " ms)";
  return binding->name + " ≤ " + fixed(binding->threshold_ms, 1) + " ms: met by " +
         percent(double(binding->met) / double(probe->requests)) + " at " + level_text(probe->level) + " (p" +
         fixed(summary.attainment * 100, 0) + " " + fixed(binding->observed_ms, 1) + " ms)";
}

// The answer in sentences, one a line: what summary.md opens with and the terminal ends with.
std::vector<std::string> answer_lines(const FindSummary& summary) {
  const auto& answer = summary.answer;
  std::vector<std::string> lines;
  const std::string& axis = summary.axis;
  if (!summary.slo.empty()) {
    if (answer.status == "found")
      lines.push_back("Largest " + axis + " meeting the SLOs: " + optional_level(answer.feasible_max) +
                      " (the smallest failing: " + optional_level(answer.infeasible_min) + ")" +
                      (answer.cliff ? "; a cliff: attainment falls by " +
                                          fixed(kCliffDrop * 100, 0) + " points or more in one step"
                                    : "") +
                      (answer.undecided ? "; uncertain (see the notes)" : "") + ".");
    else if (answer.status == "none")
      lines.push_back("No probed " + axis + " meets the SLOs (the lowest failing: " +
                      optional_level(answer.infeasible_min) + ").");
    else
      lines.push_back("Not resolved within " + std::to_string(summary.max_probes) + " runs: the SLOs hold at " +
                      optional_level(answer.feasible_max) + " and fail at " + optional_level(answer.infeasible_min) +
                      "; continue with --resume and a larger --max-probes.");
    if (auto binding = binding_text(summary); !binding.empty()) lines.push_back("Binding constraint: " + binding + ".");
  }
  if (summary.stable) {
    std::string control = summary.control_rate ? "; the control: " + percent(*summary.control_rate) + " differ" : "";
    if (answer.stable_status == "found")
      lines.push_back("Largest " + axis + " whose answers stay the same: " + optional_level(answer.stable_max) + " (" +
                      (answer.unstable_min ? "they differ from " + level_text(*answer.unstable_min)
                                           : std::string("the same at every load probed")) +
                      control + ").");
    else
      lines.push_back("Answers stay the same up to " + optional_level(answer.stable_max) + ", differ from " +
                      optional_level(answer.unstable_min) + ": not resolved (continue with --resume and a larger "
                      "--max-probes" + control + ").");
  }
  return lines;
}

// Attainment, its fit and interval as cells; dashes for a search on --stable only (no SLO).
std::vector<std::string> attainment_cells(const FindSummary& summary, const FindProbe& probe) {
  if (summary.slo.empty()) return {"—", "—", "—"};
  return {percent(probe.attainment), percent(probe.fitted), percent(probe.ci_low) + "–" + percent(probe.ci_high)};
}

std::string differing_text(const FindProbe& probe) {
  if (!probe.compared) return "—";
  return std::to_string(probe.differing.value_or(0)) + " of " + std::to_string(*probe.compared);
}

}  // namespace

int find_exit_status(const FindAnswer& answer) {
  if (answer.status == "none") return kFindNone;
  if (answer.status == "unresolved" || answer.stable_status == "unresolved") return kFindUnresolved;
  return kFindFound;
}

std::string find_probe_line(const FindSummary& summary, const FindProbe& probe) {
  std::string line = summary.axis + " " + level_text(probe.level) + ": ";
  if (!summary.slo.empty())
    line += std::to_string(probe.met) + " of " + std::to_string(probe.requests) + " met the SLOs (" +
            percent(probe.attainment) + ", fit " + percent(probe.fitted) + ", interval " + percent(probe.ci_low) +
            "–" + percent(probe.ci_high) + "): " + (probe.control ? "control" : probe.verdict) + "; ";
  else
    line += std::to_string(probe.requests) + " requests; ";
  line += std::to_string(probe.errors) + " errors, " + fixed(probe.requests_per_s, 2) + " req/s, " +
          fixed(probe.output_tokens_per_s, 1) + " output tok/s";
  if (probe.compared)
    line += "; " + differing_text(probe) + " outputs differ from the baseline" +
            (probe.stable_verdict.empty() ? "" : ": " + probe.stable_verdict);
  if (probe.oversaturated) line += "; cut: its backlog kept growing";
  return line;
}

std::string find_to_json(const FindSummary& summary) {
  namespace json = boost::json;
  const auto& answer = summary.answer;
  json::object binding;
  if (answer.binding) {
    binding = described_json::to_object(*answer.binding);
    if (const auto* probe = probe_at(summary, answer.infeasible_min)) {
      binding["level"] = json_number(probe->level);
      binding["requests"] = probe->requests;
    }
  }
  json::array probes;
  for (const auto& probe : summary.probes) probes.push_back(described_json::to_json(probe));
  json::object root{{"schema_version", kJsonSchemaVersion},
                    {"kind", "search"},
                    {"trace", summary.trace},
                    {"target", summary.target},
                    {"axis", summary.axis},
                    {"slo", summary.slo},
                    {"attainment", summary.attainment},
                    {"confidence", summary.confidence},
                    {"precision", summary.precision},
                    {"max_probes", summary.max_probes},
                    {"runs", summary.runs},
                    {"status", answer.status},
                    {"feasible_max", json_number(answer.feasible_max)},
                    {"infeasible_min", json_number(answer.infeasible_min)},
                    {"binding_constraint", answer.binding ? json::value(binding) : json::value(nullptr)},
                    {"cliff", answer.cliff},
                    {"undecided", answer.undecided},
                    {"exit_status", find_exit_status(answer)},
                    {"answer", [&] {
                       json::array lines;
                       for (const auto& line : answer_lines(summary)) lines.emplace_back(line);
                       return lines;
                     }()},
                    {"notes", described_json::to_json(answer.notes)},
                    {"probes", std::move(probes)}};
  if (summary.stable) {
    root["stable"] = *summary.stable;
    root["stable_max"] = json_number(answer.stable_max);
    root["unstable_min"] = json_number(answer.unstable_min);
    root["stable_status"] = answer.stable_status;
    root["control_rate"] = json_number(summary.control_rate);
  }
  return json_text(root) + "\n";
}

std::string find_to_markdown(const FindSummary& summary) {
  std::ostringstream out;
  out << "# Capacity search over " << summary.axis << "\n\n"
      << "Trace " << summary.trace << " against " << summary.target << ". ";
  if (!summary.slo.empty())
    out << "SLO " << summary.slo << ", met by at least " << percent(summary.attainment)
        << " of requests (intervals: " << fixed(summary.confidence * 100, 0) << " % Clopper–Pearson). ";
  if (summary.stable)
    out << "Answers must stay the same: a load fails when the lower bound of its rate of outputs differing from "
           "the baseline exceeds " << percent(*summary.stable) << " above the control's. ";
  out << summary.runs << " runs of at most " << summary.max_probes << ".\n\n";
  for (const auto& line : answer_lines(summary)) out << "**" << line << "**\n\n";
  for (const auto& note : summary.answer.notes) out << "- note: " << note << "\n";
  if (!summary.answer.notes.empty()) out << "\n";
  out << "| " << summary.axis
      << " | order | runs | requests | met | attainment | fit | interval | verdict | errors | req/s | output tok/s "
         "| differing | answers |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& probe : summary.probes) {
    auto cells = attainment_cells(summary, probe);
    out << "| " << level_text(probe.level) << (probe.control ? " (control)" : "") << " | " << probe.order << " | "
        << probe.runs.size() << " | " << probe.requests << " | " << (summary.slo.empty() ? "—" : std::to_string(probe.met))
        << " | " << cells[0] << " | " << cells[1] << " | " << cells[2] << " | "
        << (summary.slo.empty() ? "—" : probe.control ? "control" : probe.verdict)
        << (probe.oversaturated ? " (cut: backlog grew)" : "") << " | " << probe.errors << " | "
        << fixed(probe.requests_per_s, 2) << " | " << fixed(probe.output_tokens_per_s, 1) << " | "
        << differing_text(probe) << " | " << (probe.stable_verdict.empty() ? "—" : probe.stable_verdict) << " |\n";
  }
  return out.str();
}

std::string find_to_csv(const FindSummary& summary) {
  std::string out = csv_row({summary.axis, "control", "order", "runs", "requests", "met", "attainment", "fitted",
                             "ci_low", "ci_high", "verdict", "errors", "requests_per_s", "output_tokens_per_s",
                             "oversaturated", "compared", "differing", "stable_verdict"});
  for (const auto& probe : summary.probes)
    out += csv_row({level_text(probe.level), probe.control ? "true" : "false", std::to_string(probe.order),
                    std::to_string(probe.runs.size()), std::to_string(probe.requests), std::to_string(probe.met),
                    fixed(probe.attainment, 4), fixed(probe.fitted, 4), fixed(probe.ci_low, 4),
                    fixed(probe.ci_high, 4), probe.verdict, std::to_string(probe.errors),
                    fixed(probe.requests_per_s, 3), fixed(probe.output_tokens_per_s, 3),
                    probe.oversaturated ? "true" : "false", probe.compared ? std::to_string(*probe.compared) : "",
                    probe.differing ? std::to_string(*probe.differing) : "", probe.stable_verdict});
  return out;
}

HtmlReport find_report(const FindSummary& summary) {
  HtmlReport report;
  report.kind = "search";
  report.title = "retrace capacity search over " + summary.axis;
  report.generator = kToolVersion;
  report.header.trace = summary.trace;
  report.header.schedule = summary.axis + " search" + (summary.slo.empty() ? "" : ", SLO " + summary.slo);
  report.paragraphs = answer_lines(summary);
  report.notes = summary.answer.notes;
  report.charts_title = "Attainment and throughput against " + summary.axis;
  std::vector<svg::Point> attainment, throughput, differing;
  for (const auto& probe : summary.probes) {
    if (probe.control) continue;
    std::string where = summary.axis + " " + level_text(probe.level) + ": ";
    attainment.push_back({probe.level, probe.attainment * 100, probe.ci_low * 100, probe.ci_high * 100,
                          where + percent(probe.attainment) + " met the SLOs, " + probe.verdict});
    throughput.push_back({probe.level, probe.requests_per_s, {}, {}, where + fixed(probe.requests_per_s, 2) + " req/s"});
    if (probe.compared && *probe.compared > 0)
      differing.push_back({probe.level, double(probe.differing.value_or(0)) / double(*probe.compared) * 100, {}, {},
                           where + differing_text(probe) + " outputs differ"});
  }
  if (!summary.slo.empty())
    report.charts.push_back(svg::line_chart(
        "SLO attainment (%, with its interval), target dashed, boundary marked", summary.axis, "% met", attainment, 100,
        svg::LineMarks{summary.attainment * 100, summary.answer.feasible_max,
                       "largest meeting the SLOs: " + optional_level(summary.answer.feasible_max)}));
  report.charts.push_back(svg::line_chart("Throughput (requests per second)", summary.axis, "req/s", throughput));
  if (summary.stable)
    report.charts.push_back(svg::line_chart(
        "Outputs differing from the baseline (%), boundary marked", summary.axis, "% differ", differing, 100,
        svg::LineMarks{{}, summary.answer.stable_max, "answers the same up to " + optional_level(summary.answer.stable_max)}));
  HtmlTable table;
  table.id = "probes";
  table.title = "Probes";
  table.caption = "Every load probed, in load order; the fit is the isotonic (monotone) fit over all probes.";
  table.columns = {summary.axis, "runs", "requests", "met", "attainment", "fit", "interval", "verdict", "errors", "req/s",
                   "differing", "answers"};
  for (const auto& probe : summary.probes) {
    auto cells = attainment_cells(summary, probe);
    table.rows.push_back({level_text(probe.level) + (probe.control ? " (control)" : ""), std::to_string(probe.runs.size()),
                          std::to_string(probe.requests), summary.slo.empty() ? "—" : std::to_string(probe.met), cells[0],
                          cells[1], cells[2],
                          summary.slo.empty() ? "—" : probe.control ? "control" : probe.verdict + (probe.oversaturated ? " (cut)" : ""),
                          std::to_string(probe.errors), fixed(probe.requests_per_s, 2), differing_text(probe),
                          probe.stable_verdict.empty() ? "—" : probe.stable_verdict});
  }
  report.tables.push_back(std::move(table));
  return report;
}

}  // namespace retrace::report
