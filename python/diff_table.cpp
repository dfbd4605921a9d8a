// retrace.diff(baseline, run): diff/'s engine (the code `retrace diff` runs, with identical pairs
// kept) made into one row per pair and the run's summary as a dict with `retrace diff --json`'s
// names for the same counts.
#include "python/diff_table.hpp"

#include "diff/differ_count.hpp"
#include "metrics/statistics.hpp"

namespace retrace::python {

using namespace pybind11::literals;

namespace {

std::optional<std::int64_t> optional_int(std::optional<std::uint64_t> value) {
  return value ? std::optional<std::int64_t>(static_cast<std::int64_t>(*value)) : std::nullopt;
}

// A pair is a real change if any differing part is one, else unknown if any is, else a near-tie
// (diff/comparison.cpp's rule for its counts).
diff::Classification worst(const std::vector<diff::Divergence>& divergences) {
  auto worst = diff::Classification::near_tie;
  for (const auto& divergence : divergences) {
    if (divergence.classification == diff::Classification::real_change) return divergence.classification;
    if (divergence.classification == diff::Classification::unknown) worst = diff::Classification::unknown;
  }
  return worst;
}

py::object pairs_table(const diff::RunComparison& run) {
  NullableColumn baseline_id, candidate_id, first_divergent_token, candidate_index, byte, baseline_token_id,
      candidate_token_id, candidate_in_flight;
  TextColumn key, error, baseline_token, candidate_token, parts_changed;
  CategoryColumn verdict, part, classification;
  NumberColumn<std::uint8_t> identical, near_tie, real_change, lower_bound;
  NumberColumn<double> margin, baseline_logprob, candidate_logprob;
  NumberColumn<std::uint32_t> differing_parts;
  for (const diff::PairResult& pair : run.pairs) {
    baseline_id.push(optional_int(pair.baseline_id));
    candidate_id.push(optional_int(pair.candidate_id));
    key.push(pair.key.hex());
    verdict.push(diff::to_string(pair.verdict));
    identical.push(pair.verdict == diff::Verdict::identical);
    if (pair.error.empty()) error.push_absent();
    else error.push(pair.error);
    candidate_in_flight.push(pair.candidate_in_flight >= 0 ? std::optional<std::int64_t>(pair.candidate_in_flight)
                                                           : std::nullopt);
    differing_parts.push(static_cast<std::uint32_t>(pair.divergences.size()));
    if (pair.divergences.empty()) {
      for (auto* column : {&first_divergent_token, &candidate_index, &byte, &baseline_token_id, &candidate_token_id})
        column->push(std::nullopt);
      for (auto* column : {&baseline_token, &candidate_token, &parts_changed}) column->push_absent();
      part.push_absent();
      classification.push_absent();
      near_tie.push(0), real_change.push(0), lower_bound.push(0);
      margin.push(kNaN), baseline_logprob.push(kNaN), candidate_logprob.push(kNaN);
      continue;
    }
    const diff::Divergence& first = pair.divergences.front();
    const auto verdict_of_pair = worst(pair.divergences);
    first_divergent_token.push(static_cast<std::int64_t>(first.baseline_index));
    candidate_index.push(static_cast<std::int64_t>(first.candidate_index));
    byte.push(static_cast<std::int64_t>(first.byte_offset));
    part.push(diff::part_name(first, first.choice != 0));
    parts_changed.push(diff::parts_changed(pair.divergences));
    classification.push(diff::to_string(verdict_of_pair));
    near_tie.push(verdict_of_pair == diff::Classification::near_tie);
    real_change.push(verdict_of_pair == diff::Classification::real_change);
    margin.push(first.margin.value_or(kNaN));
    lower_bound.push(first.margin_is_lower_bound);
    auto token = [](const std::optional<diff::TokenView>& view, NullableColumn& id, TextColumn& text,
                    NumberColumn<double>& logprob) {
      id.push(view && view->id >= 0 ? std::optional<std::int64_t>(view->id) : std::nullopt);
      if (view) text.push(view->bytes);
      else text.push_absent();
      logprob.push(view && view->logprob ? double(*view->logprob) : kNaN);
    };
    token(first.baseline_token, baseline_token_id, baseline_token, baseline_logprob);
    token(first.candidate_token, candidate_token_id, candidate_token, candidate_logprob);
  }
  Table table;
  table.add("baseline_id", std::move(baseline_id));
  table.add("candidate_id", std::move(candidate_id));
  table.add("request_key", std::move(key));
  table.add("verdict", std::move(verdict));
  table.add_bool("identical", std::move(identical.values));
  table.add("first_divergent_token", std::move(first_divergent_token));
  table.add("candidate_index", std::move(candidate_index));
  table.add("byte", std::move(byte));
  table.add("part", std::move(part));
  table.add("parts_changed", std::move(parts_changed));
  table.add("differing_parts", std::move(differing_parts.values));
  table.add("margin", std::move(margin.values));
  table.add_bool("margin_is_lower_bound", std::move(lower_bound.values));
  table.add("classification", std::move(classification));
  table.add_bool("near_tie", std::move(near_tie.values));
  table.add_bool("real_change", std::move(real_change.values));
  table.add("baseline_token", std::move(baseline_token));
  table.add("baseline_token_id", std::move(baseline_token_id));
  table.add("baseline_logprob", std::move(baseline_logprob.values));
  table.add("candidate_token", std::move(candidate_token));
  table.add("candidate_token_id", std::move(candidate_token_id));
  table.add("candidate_logprob", std::move(candidate_logprob.values));
  table.add("error", std::move(error));
  table.add("candidate_in_flight", std::move(candidate_in_flight));
  return table.frame();
}

py::dict summary_of(const diff::Result& result, const diff::RunComparison& run) {
  py::dict not_compared_why;
  for (const auto& [reason, count] : run.not_compared_why) not_compared_why[py::str(reason)] = count;
  py::list warnings;
  for (const auto& warning : result.warnings) warnings.append(warning);
  auto maybe = [](std::optional<std::size_t> value) -> py::object {
    return value ? py::object(py::int_(*value)) : py::object(py::none());
  };
  const auto [differ, compared] = diff::differ_count(run);
  const std::optional<double> upper = metrics::clopper_pearson_upper(differ, compared);
  return py::dict("baseline"_a = result.baseline_name, "baseline_exchanges"_a = result.baseline_exchanges,
                  "name"_a = run.name, "alignment"_a = std::string(diff::to_string(run.alignment)),
                  "alignment_note"_a = run.alignment_note.empty() ? py::object(py::none()) : py::str(run.alignment_note),
                  "pairs_with_same_key"_a = run.pairs_with_same_key, "exchanges"_a = run.exchanges,
                  "aligned"_a = run.aligned, "identical"_a = run.identical, "divergent"_a = run.divergent,
                  "near_ties"_a = run.near_ties, "real_changes"_a = run.real_changes,
                  "unknown_changes"_a = run.unknown_changes, "errors"_a = run.errors,
                  "missing_in_candidate"_a = run.missing_in_candidate,
                  "missing_in_baseline"_a = run.missing_in_baseline, "not_compared"_a = run.not_compared,
                  "not_compared_why"_a = not_compared_why, "matches_expected"_a = maybe(run.matches_expected),
                  "with_expected"_a = maybe(run.with_expected), "matrix"_a = run.matrix, "differ"_a = differ,
                  "differ_rate_upper95"_a = upper ? py::object(py::float_(*upper)) : py::object(py::none()),
                  "failing"_a = diff::failing_outputs(result, diff::FailOn::any),
                  "failing_real"_a = diff::failing_outputs(result, diff::FailOn::real), "warnings"_a = warnings);
}

}  // namespace

py::tuple diff_tables(const std::filesystem::path& baseline, const std::filesystem::path& run,
                      diff::Options options) {
  options.keep_identical = true;
  diff::Result result;
  {
    py::gil_scoped_release unlocked;
    result = diff::compare_files(baseline, {run}, options);
  }
  const diff::RunComparison& comparison = result.runs.front();
  return py::make_tuple(pairs_table(comparison), summary_of(result, comparison));
}

}  // namespace retrace::python
