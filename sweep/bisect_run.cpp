// Bisect over real runs: each probe makes (or names) a run and diffs it against the baseline.
#include <ostream>
#include <stdexcept>

#include <boost/json.hpp>

#include "base/json_text.hpp"
#include "report/text.hpp"
#include "sweep/sweep.hpp"

namespace retrace::sweep {

std::filesystem::path replay_at(const LoadedTrace& trace, const std::string& trace_path,
                                const ReplayArgs& args, const std::string& target, int concurrency,
                                const std::vector<Label>& labels, const std::filesystem::path& out,
                                const std::atomic<bool>* stop,
                                std::shared_ptr<const replay::Preflight> checked) {
  auto options = to_replay_options(args, target, concurrency, labels);
  options.input = trace_path;  // the probe's report names its trace, not "trace unknown"
  options.preflight = std::move(checked);
  auto result = replay::run_replay(trace, options, out, stop);
  if (result.interrupted) throw std::runtime_error("interrupted while replaying into " + out.string());
  return out;
}

namespace {

ProbeOutcome outcome_of(const diff::Result& result, const std::string& label, double max_error_rate) {
  if (result.runs.empty()) throw std::runtime_error("diff returned no comparison for " + label);
  const auto& run = result.runs.front();
  if (auto verdict = replay::failure_verdict(run.errors, result.baseline_exchanges, max_error_rate)) {
    std::string first_error;
    for (const auto& pair : run.pairs)
      if (pair.verdict == diff::Verdict::error) {
        first_error = pair.error;
        break;
      }
    throw RequestsFailed(label + ": " + *verdict + ", so outputs cannot be compared (first: " +
                         first_error + "); check the target and the run trace " + run.name);
  }
  // An exchange diff could not compare is neither the same nor different: a probe where nothing
  // could be compared says nothing, and one where some could not says how many and why.
  const std::string not_compared = diff::not_compared_text(run);
  if (run.identical + run.divergent == 0 && !not_compared.empty())
    throw std::runtime_error(label + ": no output could be compared, " + not_compared +
                             "; bisect needs outputs it can compare");
  ProbeOutcome outcome;
  std::size_t missing = run.missing_in_candidate + run.missing_in_baseline;
  outcome.differs = run.divergent > 0 || missing > 0;
  outcome.detail = std::to_string(run.divergent) + " of " + std::to_string(result.baseline_exchanges) +
                   " outputs differ";
  if (run.divergent > 0) {
    outcome.detail += " (" + std::to_string(run.near_ties) + " near-ties, " +
                      std::to_string(run.real_changes) + " real changes";
    if (run.unknown_changes > 0)
      outcome.detail += ", " + std::to_string(run.unknown_changes) + " unclassified";
    outcome.detail += ")";
  }
  if (missing > 0) outcome.detail += ", " + std::to_string(missing) + " missing";
  if (!not_compared.empty()) outcome.detail += ", " + not_compared;
  for (const auto& pair : run.pairs) {
    if (pair.verdict != diff::Verdict::divergent) continue;
    for (const auto& divergence : pair.divergences)
      outcome.divergences.push_back("request " + std::to_string(pair.baseline_id.value_or(0)) +
                                    " (key " + pair.key.hex().substr(0, 12) +
                                    "): " + describe_divergence(divergence));
  }
  return outcome;
}

}  // namespace

BisectResult run_bisect(const BisectAxis& axis, std::ostream& out) {
  std::size_t points = axis.point_labels.size();
  if (points < 2) throw std::invalid_argument("bisect needs a baseline and at least one more point");
  out << "bisect over " << axis.name << ": " << points << " points, baseline "
      << axis.point_labels[0] << ".\n"
      << "Assuming monotonicity (once outputs differ from the baseline they keep differing along "
         "the axis), a binary search needs at most "
      << probe_budget(points) << " probes, the baseline included; the boundary's neighbours are "
                                 "then checked.\n"
      << std::flush;
  auto baseline = axis.run_for(0);
  std::size_t probe_number = 1;
  out << "probe " << probe_number << ": " << axis.point_labels[0] << " (baseline) → "
      << baseline.string() << "\n"
      << std::flush;

  auto probe = [&](std::size_t index) {
    auto candidate = axis.run_for(index);
    auto result = diff::compare_files(baseline, {candidate}, axis.diff);
    return outcome_of(result, axis.point_labels[index], axis.max_error_rate);
  };
  auto on_probe = [&](const Probe& done) {
    ++probe_number;
    out << "probe " << probe_number << ": " << axis.point_labels[done.index]
        << (done.verification ? " (checking the boundary's neighbour)" : "") << " → "
        << (done.outcome.differs ? "DIFFERS" : "same") << ": " << done.outcome.detail << "\n"
        << std::flush;
  };
  auto result = bisect(points, probe, on_probe);

  out << "\n";
  if (!result.boundary) {
    out << "No point differs from the baseline (" << axis.point_labels[0] << ") across "
        << axis.point_labels.front() << " … " << axis.point_labels.back() << ", in "
        << probe_number << " probes.\n";
    return result;
  }
  std::size_t boundary = *result.boundary;
  out << "boundary: " << axis.point_labels[boundary]
      << " is the first point whose outputs differ from the baseline (" << axis.point_labels[0]
      << ")";
  if (boundary > 1) out << "; " << axis.point_labels[boundary - 1] << " does not";
  out << ". " << probe_number << " probes (budget " << probe_budget(points) << ").\n";
  if (!result.monotonic) out << "warning: " << result.note << "\n";
  for (const auto& done : result.probes) {
    if (done.index != boundary) continue;
    out << "first divergent tokens at " << axis.point_labels[boundary] << ":\n";
    for (const auto& line : done.outcome.divergences) out << "  " << line << "\n";
    break;
  }
  return result;
}

std::string bisect_json(const BisectAxis& axis, const BisectResult& result,
                        const std::filesystem::path& runs_dir) {
  namespace json = boost::json;
  auto label = [&](std::size_t index) { return json::value(axis.point_labels.at(index)); };
  json::array probes;
  for (const auto& done : result.probes) {
    json::array divergences;
    for (const auto& line : done.outcome.divergences) divergences.push_back(json::value(line));
    probes.push_back(json::object{{"point", done.index},
                                  {"label", label(done.index)},
                                  {"verification", done.verification},
                                  {"differs", done.outcome.differs},
                                  {"detail", done.outcome.detail},
                                  {"divergences", std::move(divergences)}});
  }
  json::array points;
  for (const auto& point : axis.point_labels) points.push_back(json::value(point));
  json::object root{
      {"schema_version", report::kJsonSchemaVersion},
      {"axis", axis.name},
      {"points", std::move(points)},
      {"probes", std::move(probes)},
      {"probes_run", result.probes.size() + 1},  // the baseline's run included
      {"probe_budget", probe_budget(axis.point_labels.size())},
      {"boundary", result.boundary ? json::value(json::object{{"point", *result.boundary},
                                                               {"label", label(*result.boundary)}})
                                   : json::value(nullptr)},
      {"monotonic", result.monotonic},
      {"note", result.note.empty() ? json::value(nullptr) : json::value(result.note)},
      {"runs_dir", runs_dir.empty() ? json::value(nullptr) : json::value(runs_dir.string())}};
  return json_text(root) + "\n";
}

}  // namespace retrace::sweep
