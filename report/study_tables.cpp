// Study summary tables: the per-cell table (Markdown, also what the demo prints), the list of
// differences, summary.csv, and the words for which output part diverged first.
#include <algorithm>
#include <array>
#include <sstream>

#include "report/client.hpp"
#include "report/study_internal.hpp"
#include "report/text.hpp"

namespace retrace::report {

namespace {

// Generation order (format/trace.hpp part_rank), then diff's "no divergence given".
constexpr std::array<std::string_view, 6> kPartOrder{"reasoning", "content", "refusal", "tool_call", "embedding",
                                                     "unknown"};

std::string positions_text(std::vector<std::size_t> positions) {
  if (positions.empty()) return "—";
  std::sort(positions.begin(), positions.end());
  return std::to_string(positions.front()) + " / " + std::to_string(positions[positions.size() / 2]) +
         " / " + std::to_string(positions.back());
}

std::string part_count(const StudyCell& cell, const std::string& part) {
  auto it = cell.first_parts.find(part);
  return std::to_string(it == cell.first_parts.end() ? 0 : it->second);
}

}  // namespace

namespace study_detail {

std::string ci_cell(const Spread& spread) {
  std::string cell = fixed(spread.mean, 1);
  if (spread.ci_low) cell += " (" + fixed(*spread.ci_low, 1) + "–" + fixed(*spread.ci_high, 1) + ")";
  return cell;
}

std::string cell_label(const StudyCell& cell) { return cell.name + (cell.control ? " (control)" : ""); }

}  // namespace study_detail

using study_detail::cell_label;
using study_detail::ci_cell;

std::string first_part_key(const std::vector<diff::Divergence>& divergences) {
  if (divergences.empty()) return "unknown";
  return std::string(to_string(divergences.front().part));
}

std::string first_parts_text(const std::map<std::string, std::size_t>& parts) {
  std::vector<std::string> items;
  for (auto part : kPartOrder)
    if (auto it = parts.find(std::string(part)); it != parts.end() && it->second > 0)
      items.push_back(std::string(part) + " " + std::to_string(it->second));
  for (const auto& [part, count] : parts)  // a part this list does not know yet, never dropped
    if (std::find(kPartOrder.begin(), kPartOrder.end(), part) == kPartOrder.end() && count > 0)
      items.push_back(part + " " + std::to_string(count));
  return items.empty() ? "—" : study_detail::joined(items, ", ");
}

std::string study_cells_table(const StudySummary& summary) {
  std::ostringstream out;
  out << "Each cell's outputs are compared with the baseline's, with the 95% upper bound on the "
         "per-request rate (Clopper–Pearson); near-tie = the two candidates were within the "
         "near-tie margin; unique completions count distinct outputs per prompt over the cell's "
         "runs; first divergence = token index (min / median / max); throughput is the mean across "
         "runs (95% CI of the mean, Student t); part diverging first = of the differing outputs, how "
         "many first diverged in each part (reasoning, content, refusal, tool_call, embedding).\n\n"
      << "| cell | runs | differ from baseline (95% bound) | near-tie / real / unclassified | "
         "unique completions per prompt (mean, max, varying) | first divergence | part diverging "
         "first | cache hits (reported) | req/s | output tok/s | TTFT p50 / p99 ms | errors |\n"
      << "|---|---:|---|---|---|---|---|---|---|---|---|---:|\n";
  for (const auto& cell : summary.cells) {
    out << "| " << cell_label(cell) << " | " << cell.runs << " | " << cell.differing << " of "
        << cell.compared << " (" << rate_bound_text(cell.differing, cell.compared) << ") | "
        << cell.near_ties << " / " << cell.real_changes << " / " << cell.unclassified << " | "
        << fixed(cell.unique_mean, 2) << ", " << cell.unique_max << ", " << cell.prompts_varying
        << " of " << cell.prompts << " | " << positions_text(cell.first_divergence) << " | "
        << first_parts_text(cell.first_parts) << " | "
        << cell.cache_figures.hits << " (" << cell.cache_figures.reported << " of "
        << cell.cache_figures.exchanges << ") | " << ci_cell(cell.requests_per_s) << " | "
        << ci_cell(cell.output_tokens_per_s) << " | " << fixed(cell.ttft.p50, 1) << " / "
        << fixed(cell.ttft.p99, 1) << " | " << cell.errors << " |\n";
  }
  bool noted = false;
  for (const auto& cell : summary.cells)
    if (!cell.cache_note.empty()) {
      out << (noted ? "" : "\n") << "- " << cell.name << ": " << cell.cache_note << ".\n";
      noted = true;
    }
  return out.str();
}

std::string study_client_line(const StudySummary& summary) {
  std::vector<metrics::PlacedClient> placed;
  for (const auto& run : summary.runs)
    placed.push_back({run.cell, run.baseline ? "baseline" : "repeat " + std::to_string(run.repeat), run.client});
  return metrics::overall_line(placed);
}

std::string study_client_section(const StudySummary& summary) {
  std::ostringstream out;
  out << "Each cell's most loaded run:\n\n";
  for (const auto& cell : summary.cells) out << "- " << cell_label(cell) << ": " << cell.client.line() << "\n";
  return out.str();
}

std::string study_divergence_list(const StudySummary& summary, std::size_t at_most) {
  std::ostringstream out;
  auto entries = summary.divergences;
  order_by_severity(entries);
  if (entries.empty()) out << "None: every output matches the baseline.\n";
  std::size_t shown = 0;
  for (const auto& entry : entries) {
    if (shown++ == at_most) {
      out << "- … and " << (entries.size() - at_most) << " more\n";
      break;
    }
    out << "- `" << entry.run << "` request " << entry.baseline_id << ": "
        << describe_divergence(entry.divergence) << "\n";
  }
  return out.str();
}

std::string study_to_csv(const StudySummary& summary) {
  std::vector<std::string> columns{"cell", "concurrency", "cache", "control", "greedy", "runs", "requests",
                             "compared", "differing", "differing_rate_upper95_pct", "near_ties",
                             "real_changes", "unclassified", "differing_requests", "unique_mean",
                             "unique_max", "prompts_varying", "first_divergence_median",
                             "requests_per_s_mean", "requests_per_s_ci95_low", "requests_per_s_ci95_high",
                             "output_tokens_per_s_mean", "output_tokens_per_s_ci95_low",
                             "output_tokens_per_s_ci95_high", "cache_reported", "cache_hits",
                             "cached_tokens", "errors", "first_part_reasoning", "first_part_content", "first_part_refusal", "first_part_tool_call", "first_part_embedding", "first_part_unknown"};
  columns.insert(columns.end(), kClientCsvColumns.begin(), kClientCsvColumns.end());
  std::string out = csv_row(columns);
  auto optional_number = [](const std::optional<double>& value) { return value ? fixed(*value, 3) : ""; };
  for (const auto& cell : summary.cells) {
    auto bound = clopper_pearson_upper(cell.differing, cell.compared);
    std::string median;
    if (!cell.first_divergence.empty()) {
      auto positions = cell.first_divergence;
      std::sort(positions.begin(), positions.end());
      median = std::to_string(positions[positions.size() / 2]);
    }
    std::vector<std::string> fields{cell.name, std::to_string(cell.concurrency), cell.cache, cell.control ? "1" : "0",
                    summary.sampling.all_greedy() ? "1" : "0", std::to_string(cell.runs),
                    std::to_string(cell.requests), std::to_string(cell.compared),
                    std::to_string(cell.differing), bound ? fixed(*bound * 100, 2) : "",
                    std::to_string(cell.near_ties), std::to_string(cell.real_changes),
                    std::to_string(cell.unclassified), std::to_string(cell.differing_requests),
                    fixed(cell.unique_mean, 3), std::to_string(cell.unique_max),
                    std::to_string(cell.prompts_varying), median, fixed(cell.requests_per_s.mean, 3),
                    optional_number(cell.requests_per_s.ci_low), optional_number(cell.requests_per_s.ci_high),
                    fixed(cell.output_tokens_per_s.mean, 3), optional_number(cell.output_tokens_per_s.ci_low),
                    optional_number(cell.output_tokens_per_s.ci_high),
                    std::to_string(cell.cache_figures.reported), std::to_string(cell.cache_figures.hits),
                    std::to_string(cell.cache_figures.cached_tokens), std::to_string(cell.errors),
                    part_count(cell, "reasoning"), part_count(cell, "content"), part_count(cell, "refusal"),
                    part_count(cell, "tool_call"), part_count(cell, "embedding"), part_count(cell, "unknown")};
    auto client = client_csv_fields(cell.client);
    fields.insert(fields.end(), client.begin(), client.end());
    out += csv_row(fields);
  }
  return out;
}


}  // namespace retrace::report
