// A study's summary from its finished runs: each cell diffed against the baseline, its outputs
// grouped per prompt, its throughput across runs, its cache hits as the server reported them; and
// exchanges.csv, every exchange's sampling as sent and cached tokens, written as the runs are read.
#include <boost/json.hpp>
#include <algorithm>
#include <map>
#include <set>

#include "base/private_file.hpp"
#include "report/server_breakdown.hpp"
#include "report/text.hpp"
#include "sweep/study.hpp"

namespace retrace::sweep {

namespace json = boost::json;

namespace {

struct Identity {
  std::string kind = "unknown", version, evidence;
};

Identity identity_of(const TraceHeader& header) {
  Identity identity;
  json::error_code ec;
  auto info = json::parse(header.server_info, ec);
  if (ec || !info.is_object()) return identity;
  auto* server = info.get_object().if_contains("server");
  if (!server || !server->is_object()) return identity;
  auto text = [&](std::string_view key) {
    auto* value = server->get_object().if_contains(key);
    return value && value->is_string() ? std::string(value->get_string()) : std::string();
  };
  identity.kind = text("kind").empty() ? "unknown" : text("kind");
  identity.version = text("version");
  identity.evidence = text("evidence");
  return identity;
}

std::string prompt_of(const Exchange& exchange) {
  const std::string* prompt = exchange.label("study_prompt");
  return prompt ? *prompt : std::to_string(exchange.source_id.value_or(exchange.id));
}

// Reads one run's exchanges once: its sampling into the study's audit, its cache figures, its
// rows of exchanges.csv.
struct RunReader {
  report::SamplingAudit& sampling;
  std::string& model;
  std::string& csv;

  report::CacheFigures read(const LoadedTrace& run, const std::string& name, const std::string& cell) {
    report::CacheFigures figures;
    for (const auto& exchange : run.exchanges) {
      auto audit = audit_exchange(exchange);
      count_sampling(audit, sampling);
      bool failed = exchange.error.kind != ErrorKind::none;
      if (!failed) {
        ++figures.exchanges;
        if (audit.cached_tokens) {
          ++figures.reported;
          if (*audit.cached_tokens > 0) ++figures.hits;
          figures.cached_tokens += static_cast<std::uint64_t>(std::max<std::int64_t>(0, *audit.cached_tokens));
        }
        if (model.empty()) model = audit.model;
      }
      auto text = [](const std::optional<std::string>& value) { return value.value_or(""); };
      csv += report::csv_row({name, cell, std::to_string(exchange.source_id.value_or(exchange.id)),
                              prompt_of(exchange), text(audit.temperature),
                              audit.temperature ? "0" : "1", text(audit.top_p), text(audit.top_k),
                              text(audit.seed), text(audit.n),
                              audit.cached_tokens ? std::to_string(*audit.cached_tokens) : "",
                              std::string(to_string(exchange.error.kind))});
    }
    return figures;
  }
};

void add(report::CacheFigures& into, const report::CacheFigures& figures) {
  into.exchanges += figures.exchanges;
  into.reported += figures.reported;
  into.hits += figures.hits;
  into.cached_tokens += figures.cached_tokens;
}

std::string cache_note(const report::StudyCell& cell, CacheControl control) {
  const auto& figures = cell.cache_figures;
  if (cell.cache == "warm") {
    if (figures.reported == 0)
      return "the server reported no cached-token counts, so whether this cell was warm is not known";
    if (figures.hits == 0) return "no request hit the cache: this cell is not warm";
    return "";
  }
  if (control == CacheControl::none) return "no way to empty this server's cache is known: cold in name only";
  if (figures.hits > 0)
    return std::to_string(figures.hits) + " of " + std::to_string(figures.reported) +
           " responses reported cached tokens: not wholly cold";
  return "";
}

report::StudyRunFigures run_figures(const PlannedRun& planned, const LoadedTrace& run, const std::string& cell) {
  auto stats = replay::compute_stats(run.header, run.exchanges);
  report::StudyRunFigures figures;
  figures.name = planned.name;
  figures.file = planned.file;
  figures.cell = cell;
  figures.repeat = planned.repeat;
  figures.exchanges = stats.exchanges;
  figures.errors = stats.exchanges - stats.completed;
  figures.requests_per_s = stats.requests_per_s;
  figures.output_tokens_per_s = stats.output_tokens_per_s;
  figures.client = metrics::client_of(stats);
  return figures;
}

// One cell's figures gathered run by run, then finished: the counts, the part each difference
// first diverged in, completions per prompt, throughput across runs, latency pooled.
struct CellTotals {
  report::StudyCell cell;
  std::map<std::string, std::set<std::string>> completions;
  std::set<std::uint64_t> differing_requests;
  std::vector<double> request_rates, token_rates;
  std::vector<metrics::RunClient> clients;
  std::vector<Exchange> pooled;

  void add_run(const diff::RunComparison& comparison, const report::StudyRunFigures& figures, const LoadedTrace& run) {
    ++cell.runs;
    cell.compared += figures.compared;
    cell.differing += figures.differing;
    cell.near_ties += comparison.near_ties;
    cell.real_changes += comparison.real_changes;
    cell.unclassified += comparison.unknown_changes;
    cell.errors += figures.errors;
    add(cell.cache_figures, figures.cache_figures);
    request_rates.push_back(figures.requests_per_s);
    token_rates.push_back(figures.output_tokens_per_s);
    clients.push_back(figures.client);
    for (const auto& pair : comparison.pairs) {
      if (pair.verdict != diff::Verdict::divergent) continue;
      ++cell.first_parts[report::first_part_key(pair.divergences)];
      if (pair.divergences.empty()) continue;
      cell.first_divergence.push_back(pair.divergences.front().baseline_index);
      if (pair.baseline_id) differing_requests.insert(*pair.baseline_id);
    }
    for (const auto& exchange : run.exchanges)
      if (exchange.error.kind == ErrorKind::none) completions[prompt_of(exchange)].insert(diff::output_text(exchange));
    pooled.insert(pooled.end(), run.exchanges.begin(), run.exchanges.end());
  }

  void finish(const TraceHeader& header, CacheControl control) {
    cell.differing_requests = differing_requests.size();
    cell.prompts = completions.size();
    std::size_t total = 0;
    for (const auto& [prompt, outputs] : completions) {
      total += outputs.size();
      cell.unique_max = std::max(cell.unique_max, outputs.size());
      if (outputs.size() > 1) ++cell.prompts_varying;
    }
    if (cell.prompts > 0) cell.unique_mean = double(total) / double(cell.prompts);
    cell.requests_per_s = report::spread_of(request_rates);
    cell.output_tokens_per_s = report::spread_of(token_rates);
    if (auto most = metrics::most_loaded(clients)) cell.client = clients[*most];
    auto stats = replay::compute_stats(header, pooled);
    cell.ttft = stats.ttft;
    cell.e2e = stats.e2e;
    std::vector<replay::ExchangeMetrics> metrics;
    metrics.reserve(pooled.size());
    for (const auto& exchange : pooled) metrics.push_back(replay::summarize(exchange));
    cell.latency = report::latency_samples(metrics);
    cell.cache_note = cache_note(cell, control);
  }
};

// What was studied (the grid, the server, the requests), before any figure.
report::StudySummary study_scope(const Plan& plan, const StudySettings& settings, const LoadedTrace& baseline,
                                 const Identity& identity) {
  report::StudySummary summary;
  summary.trace = plan.trace;
  summary.target = plan.target;
  summary.baseline_run = plan.runs.front().name;
  summary.header = report::header_from_trace(baseline.header);
  if (summary.header.trace.empty()) summary.header.trace = plan.trace;
  summary.server_kind = identity.kind;
  summary.server_version = identity.version;
  summary.server_evidence = identity.evidence;
  summary.same_prompt = settings.same_prompt;
  summary.cache = settings.cache;
  summary.repeats = plan.repeats;
  summary.greedy_forced = settings.greedy;
  for (double level : plan.levels) summary.concurrency.push_back(static_cast<int>(level));
  std::string levels;
  for (int level : summary.concurrency) levels += (levels.empty() ? "" : ",") + std::to_string(level);
  std::string states;
  for (const auto& state : settings.cache) states += (states.empty() ? "" : ",") + state;
  summary.header.schedule = "study: concurrency " + levels + " × cache " + states + " × " +
                            std::to_string(plan.repeats) + (plan.repeats == 1 ? " run" : " runs") + ", and a baseline";
  summary.requests = baseline.exchanges.size();
  std::set<std::string> prompts;
  for (const auto& exchange : baseline.exchanges) prompts.insert(prompt_of(exchange));
  summary.prompts = prompts.size();
  return summary;
}

// The runs of one cell (a level and a cache state), loaded in plan order; refused when one has
// not finished.
struct CellRuns {
  std::vector<LoadedTrace> runs;
  std::vector<const PlannedRun*> planned;
  std::vector<std::string> names;
};

CellRuns cell_runs(const Plan& plan, const StudySettings& settings, const std::filesystem::path& dir, double level,
                   const std::string& cache) {
  CellRuns cell;
  for (std::size_t i = 1; i < plan.runs.size(); ++i) {
    const auto& run = plan.runs[i];
    if (run.level != level || settings.run_cache.at(i) != cache) continue;
    if (!run.done)
      throw std::runtime_error("run " + run.name + " has not finished; continue with --resume " + dir.string());
    cell.runs.push_back(load_trace(dir / run.file));
    cell.planned.push_back(&run);
    cell.names.push_back(run.name);
  }
  return cell;
}

}  // namespace

report::StudySummary summarize_study(const Plan& plan, const StudySettings& settings,
                                     const std::filesystem::path& dir) {
  const PlannedRun& baseline_run = plan.runs.front();
  if (!baseline_run.done)
    throw std::runtime_error("the baseline run has not finished; continue with --resume " + dir.string());
  LoadedTrace baseline = load_trace(dir / baseline_run.file);
  auto options = diff_options(plan, false);
  Identity identity = identity_of(baseline.header);
  CacheControl control = cache_control(identity.kind);
  report::StudySummary summary = study_scope(plan, settings, baseline, identity);

  std::string csv = report::csv_row({"run", "cell", "request", "prompt", "temperature", "temperature_left_to_server",
                          "top_p", "top_k", "seed", "n", "cached_tokens", "error"});
  RunReader reader{summary.sampling, summary.model, csv};

  {
    auto figures = run_figures(baseline_run, baseline, "c" + level_text(baseline_run.level) + " " +
                                                            settings.run_cache.front());
    figures.baseline = true;
    figures.cache_figures = reader.read(baseline, baseline_run.name, figures.cell);
    summary.errors += figures.errors;
    summary.runs.push_back(figures);
  }

  for (double level : plan.levels)
    for (const auto& cache : settings.cache) {
      CellTotals totals;
      auto& cell = totals.cell;
      cell.concurrency = static_cast<int>(level);
      cell.cache = cache;
      cell.name = "c" + level_text(level) + " " + cache;
      cell.control = level == plan.levels.front() && cache == settings.cache.front();
      cell.cache_method = cache_method(control, cache);
      cell.requests = summary.requests;
      auto [runs, planned, names] = cell_runs(plan, settings, dir, level, cache);
      std::vector<const LoadedTrace*> candidates;
      for (const auto& run : runs) candidates.push_back(&run);
      diff::Result result = diff::compare(baseline, candidates, names, options);
      for (std::size_t i = 0; i < runs.size(); ++i) {
        const auto& comparison = result.runs.at(i);
        auto figures = run_figures(*planned[i], runs[i], cell.name);
        figures.compared = comparison.identical + comparison.divergent;
        figures.differing = comparison.divergent;
        figures.cache_figures = reader.read(runs[i], figures.name, cell.name);
        totals.add_run(comparison, figures, runs[i]);
        auto& tallies = summary.by_in_flight;
        if (tallies.size() < comparison.by_in_flight.size()) tallies.resize(comparison.by_in_flight.size());
        for (std::size_t n = 0; n < comparison.by_in_flight.size(); ++n) {
          tallies[n].compared += comparison.by_in_flight[n].compared;
          tallies[n].differing += comparison.by_in_flight[n].differing;
        }
        report::add_tallies(summary.by_server, comparison.by_server);
        summary.errors += figures.errors;
        summary.runs.push_back(std::move(figures));
      }
      totals.finish(baseline.header, control);
      auto divergences = collect_divergences(level, result);
      summary.divergences.insert(summary.divergences.end(), divergences.begin(), divergences.end());
      summary.cells.push_back(std::move(cell));
    }
  write_private_file(dir / "exchanges.csv", csv);
  return summary;
}

}  // namespace retrace::sweep
