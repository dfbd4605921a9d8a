// Study summary renderers: the scope paragraph (and its clauses), JSON and Markdown (the cell
// table and CSV are study_tables.cpp). Every count of differences
// carries its 95 % upper bound; every throughput its 95 % interval across repeats; a study whose
// requests were not all greedy says so first, in every form.
#include "report/study_summary.hpp"

#include <algorithm>
#include <numeric>
#include <sstream>

#include <boost/json.hpp>

#include "report/client.hpp"
#include "report/in_flight_breakdown.hpp"
#include "report/server_breakdown.hpp"
#include "report/study_internal.hpp"
#include "report/text.hpp"

namespace retrace::report {

namespace json = boost::json;

std::size_t StudySummary::compared() const {
  std::size_t total = 0;
  for (const auto& cell : cells) total += cell.compared;
  return total;
}

std::size_t StudySummary::differing() const {
  std::size_t total = 0;
  for (const auto& cell : cells) total += cell.differing;
  return total;
}

namespace study_detail {

std::string joined(const std::vector<std::string>& items, std::string_view last) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i)
    out += (i == 0 ? "" : i + 1 == items.size() ? std::string(last) : ", ") + items[i];
  return out;
}

json::object spread_json(const Spread& spread) {
  return {{"mean", spread.mean},
          {"min", spread.min},
          {"max", spread.max},
          {"stddev", spread.count > 1 ? json::value(spread.stddev) : json::value(nullptr)},
          {"ci95_low", json_number(spread.ci_low)},
          {"ci95_high", json_number(spread.ci_high)},
          {"samples", spread.count}};
}

json::object counts_json(const std::map<std::string, std::size_t>& values) {
  json::object out;
  for (const auto& [value, count] : values) out[value] = count;
  return out;
}

}  // namespace study_detail

namespace {

using study_detail::counts_json;
using study_detail::joined;
using study_detail::spread_json;

std::string percent_text(double fraction) {
  double percent = fraction * 100;
  return fixed(percent, percent < 1 ? 2 : 1) + " %";
}

std::string load_range(const StudySummary& summary) {
  if (summary.concurrency.empty()) return "no load";
  auto [low, high] = std::minmax_element(summary.concurrency.begin(), summary.concurrency.end());
  if (*low == *high) return "concurrency " + std::to_string(*low);
  return "concurrency " + std::to_string(*low) + " to " + std::to_string(*high);
}

// What each cache state asked for turned out to be, from the cells' reported hits.
std::string cache_states(const StudySummary& summary) {
  std::vector<std::string> states;
  for (const auto& state : summary.cache) {
    CacheFigures figures;
    std::string method, note;
    for (const auto& cell : summary.cells) {
      if (cell.cache != state) continue;
      figures.exchanges += cell.cache_figures.exchanges;
      figures.reported += cell.cache_figures.reported;
      figures.hits += cell.cache_figures.hits;
      method = cell.cache_method;
      if (!cell.cache_note.empty()) note = cell.cache_note;
    }
    std::string text = state + " (" + method;
    if (figures.reported > 0)
      text += "; " + std::to_string(figures.hits) + " of " + std::to_string(figures.reported) +
              " responses reported cached prompt tokens";
    else
      text += "; the server reported no cached-token counts";
    text += ")";
    if (!note.empty()) text += " — " + note;
    states.push_back(text);
  }
  return joined(states);
}

std::string sampling_values(const std::map<std::string, std::size_t>& values) {
  std::vector<std::string> items;
  for (const auto& [value, count] : values) items.push_back(value + " ×" + std::to_string(count));
  return joined(items, ", ");
}


json::object cache_json(const CacheFigures& figures) {
  return {{"exchanges", figures.exchanges},
          {"reported", figures.reported},
          {"hits", figures.hits},
          {"cached_tokens", figures.cached_tokens}};
}


}  // namespace

std::string bound_sentence(std::size_t k, std::size_t n) {
  auto upper = clopper_pearson_upper(k, n);
  if (!upper) return "no output was compared";
  std::string out = std::to_string(k) + " of " + std::to_string(n) +
                    " differed: the per-request rate is at most " + percent_text(*upper) + " (95 %)";
  return k == 0 ? out + ", not zero" : out;
}

std::string sampling_banner(const StudySummary& summary) {
  const auto& audit = summary.sampling;
  if (audit.all_greedy()) return "";
  std::string out = "**NOT GREEDY**: " + std::to_string(audit.exchanges - audit.greedy) + " of " +
                    std::to_string(audit.exchanges) + " requests were not sent at temperature 0 (";
  std::vector<std::string> why;
  if (audit.temperature_unset > 0)
    why.push_back(std::to_string(audit.temperature_unset) +
                  " left the temperature to the server's defaults");
  if (audit.sampled > 0) why.push_back(std::to_string(audit.sampled) + " asked for temperature above 0");
  out += joined(why) +
         "). Their outputs are sampled: differences between runs are expected from sampling and "
         "say nothing about determinism. Run again with --greedy to send temperature 0.";
  return out;
}

namespace study_detail {

std::string served_by(const StudySummary& summary) {
  return (summary.model.empty() ? "a model the server did not name in its responses"
                                : "`" + summary.model + "` as the server named it") +
         ", served by " +
         (summary.server_kind == "unknown"             ? std::string("a server the preflight could not identify")
          : summary.server_kind == "openai-compatible" ? std::string("an OpenAI-compatible server, nothing more specific identified")
                                                       : summary.server_kind) +
         (summary.server_version.empty() ? " (version not reported)" : " " + summary.server_version) +
         (summary.server_evidence.empty() ? "" : " (identified by " + summary.server_evidence + ")") + " at " +
         summary.target;
}

std::string request_set(const StudySummary& summary) {
  if (summary.same_prompt) return "one prompt sent " + std::to_string(*summary.same_prompt) + " times per run";
  return "this set of " + std::to_string(summary.requests) + " requests (" + std::to_string(summary.prompts) +
         " distinct prompts)";
}

std::string cache_clause(const StudySummary& summary) { return "with the prompt cache " + cache_states(summary); }

std::string runs_and_sampling(const StudySummary& summary) {
  std::string out = std::to_string(summary.repeats) + (summary.repeats == 1 ? " run" : " runs") + " of each, ";
  if (summary.sampling.all_greedy())
    return out + "at temperature 0 (" + (summary.greedy_forced ? "set by --greedy" : "as sent") + " on every request)";
  return out + "with sampling as sent (not greedy: see above)";
}

std::string load_clause(const StudySummary& summary) { return "at " + load_range(summary); }

std::string not_evidence() {
  return "It is not evidence about determinism in general, other models, other runtimes or versions, other "
         "GPUs, other loads or larger request sets.";
}

std::string control_sentence(const StudySummary& summary) {
  if (summary.cells.empty()) return "";
  const auto& control = summary.cells.front();
  return "The control (" + control.name + ", the baseline's configuration run again), the noise floor every other "
         "cell is read against: " + bound_sentence(control.differing, control.compared) + ".";
}

}  // namespace study_detail

std::string study_scope(const StudySummary& summary) {
  using namespace study_detail;
  std::ostringstream out;
  out << "**Scope.** This is direct evidence about " << served_by(summary) << ", on " << request_set(summary)
      << ", " << load_clause(summary) << ", " << cache_clause(summary) << ", " << runs_and_sampling(summary)
      << ", each output compared with the baseline run `" << summary.baseline_run << "`. " << not_evidence()
      << " Across the study, " << bound_sentence(summary.differing(), summary.compared()) << ".";
  if (auto control = control_sentence(summary); !control.empty()) out << " " << control;
  if (summary.errors > 0)
    out << " " << summary.errors << " requests failed and are not counted: results are incomplete.";
  return out.str();
}

std::vector<std::pair<std::string, std::size_t>> position_histogram(const std::vector<std::size_t>& positions) {
  std::vector<std::pair<std::string, std::size_t>> buckets;
  if (positions.empty()) return buckets;
  std::size_t highest = *std::max_element(positions.begin(), positions.end());
  buckets.emplace_back("0", 0);
  for (std::size_t low = 1; low <= highest; low *= 2)
    buckets.emplace_back(low == 1 ? "1" : std::to_string(low) + "-" + std::to_string(low * 2 - 1), 0);
  for (std::size_t position : positions) {
    std::size_t bucket = 0;
    while ((std::size_t{1} << bucket) <= position) ++bucket;  // 0 -> 0, 1 -> 1, 2-3 -> 2, ...
    ++buckets[bucket].second;
  }
  return buckets;
}

namespace study_detail {

json::object cell_json(const StudyCell& cell) {
  json::array positions;
  for (auto position : cell.first_divergence) positions.push_back(position);
  json::array histogram;
  for (const auto& [bucket, count] : position_histogram(cell.first_divergence))
    histogram.push_back(json::object{{"tokens", bucket}, {"outputs", count}});
  return json::object{
      {"name", cell.name},
      {"concurrency", cell.concurrency},
      {"cache", cell.cache},
      {"control", cell.control},
      {"cache_method", cell.cache_method},
      {"cache_note", cell.cache_note},
      {"runs", cell.runs},
      {"requests", cell.requests},
      {"compared", cell.compared},
      {"differing", cell.differing},
      {"differing_rate_upper95", json_number(clopper_pearson_upper(cell.differing, cell.compared))},
      {"near_ties", cell.near_ties},
      {"real_changes", cell.real_changes},
      {"unclassified", cell.unclassified},
      {"differing_requests", cell.differing_requests},
      {"unique_completions", json::object{{"prompts", cell.prompts},
                                          {"mean", cell.unique_mean},
                                          {"max", cell.unique_max},
                                          {"prompts_varying", cell.prompts_varying}}},
      {"first_divergence_positions", std::move(positions)},
      {"first_divergence_histogram", std::move(histogram)},
      {"first_diverging_part", counts_json(cell.first_parts)},
      {"requests_per_s", spread_json(cell.requests_per_s)},
      {"output_tokens_per_s", spread_json(cell.output_tokens_per_s)},
      {"ttft_ms", json::object{{"p50", cell.ttft.p50}, {"p99", cell.ttft.p99}}},
      {"e2e_ms", json::object{{"p50", cell.e2e.p50}, {"p99", cell.e2e.p99}}},
      {"errors", cell.errors},
      {"cached", cache_json(cell.cache_figures)},
      {"client", run_client_json(cell.client)}};
}

// The study's client as a whole: its line, whether it may have set the pace anywhere, and in which cells.
json::object study_client_json(const StudySummary& summary) {
  json::array where;
  bool recorded = false;
  for (const auto& run : summary.runs) recorded = recorded || run.client.usage;
  for (const auto& cell : summary.cells)
    if (cell.client.may_be_bottleneck()) where.emplace_back(cell.name);
  return overall_client_json(study_client_line(summary), recorded, std::move(where), "bottleneck_cells");
}

json::object study_json(const StudySummary& summary) {
  json::array cells;
  for (const auto& cell : summary.cells) cells.push_back(cell_json(cell));
  json::array runs;
  for (const auto& run : summary.runs)
    runs.push_back(json::object{{"name", run.name},
                                {"file", run.file},
                                {"cell", run.cell},
                                {"repeat", run.repeat},
                                {"baseline", run.baseline},
                                {"exchanges", run.exchanges},
                                {"errors", run.errors},
                                {"compared", run.compared},
                                {"differing", run.differing},
                                {"requests_per_s", run.requests_per_s},
                                {"output_tokens_per_s", run.output_tokens_per_s},
                                {"cached", cache_json(run.cache_figures)},
                                {"client", run_client_json(run.client)}});
  json::array divergences;
  for (const auto& entry : summary.divergences)
    divergences.push_back(json::object{
        {"run", entry.run},
        {"concurrency", level_json(entry.level)},
        {"baseline_id", entry.baseline_id},
        {"key", entry.key},
        {"baseline_index", entry.divergence.baseline_index},
        {"candidate_index", entry.divergence.candidate_index},
        {"margin", json_number(entry.divergence.margin)},
        {"classification", std::string(classification_name(entry.divergence.classification))},
        {"text", describe_divergence(entry.divergence)}});
  const auto& audit = summary.sampling;
  json::array concurrency, cache;
  for (int level : summary.concurrency) concurrency.push_back(level);
  for (const auto& state : summary.cache) cache.emplace_back(state);
  json::object root{
      {"schema_version", kJsonSchemaVersion},
      {"kind", "study"},
      {"header", header_json(summary.header)},
      {"not_greedy", sampling_banner(summary).empty() ? json::value(nullptr)
                                                      : json::value(sampling_banner(summary))},
      {"scope", study_scope(summary)},
      {"trace", summary.trace},
      {"target", summary.target},
      {"model", summary.model},
      {"server", json::object{{"kind", summary.server_kind},
                              {"version", summary.server_version},
                              {"evidence", summary.server_evidence}}},
      {"requests", summary.requests},
      {"prompts", summary.prompts},
      {"same_prompt", summary.same_prompt ? json::value(*summary.same_prompt) : json::value(nullptr)},
      {"concurrency", std::move(concurrency)},
      {"cache", std::move(cache)},
      {"repeats", summary.repeats},
      {"greedy", audit.all_greedy()},
      {"greedy_forced", summary.greedy_forced},
      {"sampling", json::object{{"exchanges", audit.exchanges},
                                {"greedy", audit.greedy},
                                {"temperature_unset", audit.temperature_unset},
                                {"sampled", audit.sampled},
                                {"temperature", counts_json(audit.temperature)},
                                {"top_p", counts_json(audit.top_p)},
                                {"top_k", counts_json(audit.top_k)},
                                {"seed", counts_json(audit.seed)},
                                {"n", counts_json(audit.n)}}},
      {"baseline_run", summary.baseline_run},
      {"compared", summary.compared()},
      {"differing", summary.differing()},
      {"differing_rate_upper95", json_number(clopper_pearson_upper(summary.differing(), summary.compared()))},
      {"by_in_flight", in_flight_json(in_flight_buckets(summary.by_in_flight))},
      {"by_cache", by_cache_json(summary.by_server)},
      {"by_preempted", by_preempted_json(summary.by_server)},
      {"differs", summary.any_differs()},
      {"errors", summary.errors},
      {"client", study_client_json(summary)},
      {"cells", std::move(cells)},
      {"runs", std::move(runs)},
      {"divergences", std::move(divergences)}};
  return root;
}

}  // namespace study_detail

std::string study_to_json(const StudySummary& summary) { return json_text(study_detail::study_json(summary)) + "\n"; }

std::string study_to_markdown(const StudySummary& summary) {
  std::ostringstream out;
  out << "# retrace study\n\n";
  if (auto banner = sampling_banner(summary); !banner.empty()) out << banner << "\n\n";
  out << study_scope(summary) << "\n\n" << header_line(summary.header) << "\n\n"
      << study_client_line(summary) << "\n\n";
  if (auto load = in_flight_sentence(in_flight_buckets(summary.by_in_flight)); !load.empty())
    out << "Load: " << load << ".\n\n";
  if (auto server = server_sentence(summary.by_server); !server.empty()) out << "Server: " << server << ".\n\n";
  out << "## Cells\n\n";
  if (summary.sampling.all_greedy())
    out << "At temperature 0 an output that differs from the baseline's is nondeterminism of the "
           "serving stack under that cell's conditions; read each cell against the control's rate.\n\n";
  out << study_cells_table(summary);
  out << "\n## Client headroom\n\n" << study_client_section(summary);
  out << "\n## Cache states\n\n";
  for (const auto& cell : summary.cells)
    out << "- " << cell.name << ": " << cell.cache_method << "; " << cell.cache_figures.hits
        << " of " << cell.cache_figures.exchanges << " responses with cached prompt tokens ("
        << cell.cache_figures.cached_tokens << " tokens; " << cell.cache_figures.reported
        << " responses reported a count)\n";

  out << "\n## Sampling as sent (every exchange of every run)\n\n";
  const auto& audit = summary.sampling;
  out << "- " << audit.greedy << " of " << audit.exchanges << " at temperature 0"
      << (summary.greedy_forced ? " (--greedy)" : "") << "; " << audit.temperature_unset
      << " left the temperature to the server; " << audit.sampled << " above 0\n";
  for (auto [name, values] : {std::pair{"temperature", &audit.temperature}, {"top_p", &audit.top_p},
                              {"top_k", &audit.top_k}, {"seed", &audit.seed}, {"n", &audit.n}})
    out << "- " << name << ": " << sampling_values(*values) << "\n";

  std::vector<std::size_t> all_positions;
  for (const auto& cell : summary.cells)
    all_positions.insert(all_positions.end(), cell.first_divergence.begin(), cell.first_divergence.end());
  out << "\n## First divergent token (position in the output, every cell)\n\n";
  if (all_positions.empty()) {
    out << "No output differed.\n";
  } else {
    out << "| tokens | outputs |\n|---|---:|\n";
    for (const auto& [bucket, count] : position_histogram(all_positions))
      out << "| " << bucket << " | " << count << " |\n";
  }

  out << "\n## Runs\n\n| run | cell | requests | errors | differ | cache hits | req/s | output tok/s | client |\n"
         "|---|---|---:|---:|---|---:|---:|---:|---|\n";
  for (const auto& run : summary.runs)
    out << "| " << run.name << (run.baseline ? " (baseline)" : "") << " | " << run.cell << " | "
        << run.exchanges << " | " << run.errors << " | "
        << (run.baseline ? std::string("—") : std::to_string(run.differing) + " of " + std::to_string(run.compared))
        << " | " << run.cache_figures.hits << " | " << fixed(run.requests_per_s, 2) << " | "
        << fixed(run.output_tokens_per_s, 1) << " | " << run.client.line() << " |\n";

  out << "\n## Differences from the baseline (first divergent token, real changes first)\n\n";
  out << study_divergence_list(summary, summary.divergences.size());
  return out.str();
}

}  // namespace retrace::report
