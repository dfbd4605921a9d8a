// The diff as one JSON document: everything, every divergence with its context and alternatives.
#include <cstdio>

#include <boost/json.hpp>

#include "report/diff_internal.hpp"
#include "report/diff_report.hpp"
#include "report/in_flight_breakdown.hpp"
#include "report/server_breakdown.hpp"
#include "metrics/statistics.hpp"
#include "report/text.hpp"

namespace retrace::report {

using diff::Divergence;
using diff::Result;
using diff::TokenView;

namespace {

boost::json::value token_json(const std::optional<TokenView>& token) {
  if (!token) return nullptr;
  boost::json::object object;
  object["id"] = json_count(token->id);
  object["text"] = token->bytes;  // Boost.JSON escapes; invalid UTF-8 is kept as is, see bytes_hex
  if (!is_valid_utf8(token->bytes)) {
    std::string hex;
    char byte[3];
    for (unsigned char c : token->bytes) std::snprintf(byte, sizeof byte, "%02x", c), hex += byte;
    object["text"] = printable(token->bytes);
    object["bytes_hex"] = hex;
  }
  object["logprob"] = token->logprob ? json_float(*token->logprob) : boost::json::value(nullptr);
  if (!token->top.empty()) {
    boost::json::array top;
    for (const auto& alternative : token->top) {
      boost::json::object entry;
      entry["id"] = json_count(alternative.id);
      entry["text"] = printable(alternative.bytes);
      entry["logprob"] = json_float(alternative.logprob);
      top.push_back(std::move(entry));
    }
    object["top"] = std::move(top);
  }
  return object;
}

boost::json::array tokens_json(const std::vector<TokenView>& tokens) {
  boost::json::array array;
  for (const auto& token : tokens) array.push_back(token_json(token));
  return array;
}

template <typename T>
boost::json::value optional_json(const std::optional<T>& value) {
  if (!value) return nullptr;
  return boost::json::value_from(*value);
}

boost::json::object divergence_json(const Divergence& divergence) {
  boost::json::object object;
  object["choice"] = divergence.choice;
  object["part"] = to_string(divergence.part);
  if (divergence.part == Part::tool_call) {
    object["tool_call"] = divergence.tool_call;
    object["tool_name"] = divergence.tool_name;
  }
  if (divergence.part == Part::embedding) {
    object["largest_difference"] = optional_json(divergence.largest_difference);
    object["values_differing"] = divergence.values_differing;
  }
  object["basis"] = diff::to_string(divergence.basis);
  if (!divergence.basis_note.empty()) object["basis_note"] = divergence.basis_note;
  object["baseline_index"] = divergence.baseline_index;
  object["candidate_index"] = divergence.candidate_index;
  object["byte_offset"] = divergence.byte_offset;
  object["baseline_token"] = token_json(divergence.baseline_token);
  object["candidate_token"] = token_json(divergence.candidate_token);
  object["baseline_before"] = tokens_json(divergence.baseline_before);
  object["baseline_after"] = tokens_json(divergence.baseline_after);
  object["candidate_before"] = tokens_json(divergence.candidate_before);
  object["candidate_after"] = tokens_json(divergence.candidate_after);
  object["margin"] = optional_json(divergence.margin);
  object["margin_is_lower_bound"] = divergence.margin_is_lower_bound;
  object["classification"] = diff::to_string(divergence.classification);
  object["common_suffix"] = divergence.common_suffix;
  object["edit_distance"] = divergence.edit_distance;
  object["edit_distance_capped"] = divergence.edit_distance_capped;
  object["units"] = divergence.basis == diff::Basis::token_ids ? "tokens" : "bytes";
  object["baseline_tokens"] = divergence.baseline_tokens;
  object["candidate_tokens"] = divergence.candidate_tokens;
  object["baseline_bytes"] = divergence.baseline_bytes;
  object["candidate_bytes"] = divergence.candidate_bytes;
  object["baseline_finish"] = divergence.baseline_finish;
  object["candidate_finish"] = divergence.candidate_finish;
  return object;
}

boost::json::object pair_json(const diff::PairResult& pair) {
  boost::json::object entry;
  entry["verdict"] = diff::to_string(pair.verdict);
  entry["baseline_id"] = optional_json(pair.baseline_id);
  entry["candidate_id"] = optional_json(pair.candidate_id);
  entry["baseline_position"] = optional_json(pair.baseline_position);
  entry["candidate_position"] = optional_json(pair.candidate_position);
  entry["key"] = pair.key.hex();
  if (!pair.error.empty()) entry["error"] = pair.error;
  if (pair.baseline_matches_expected) entry["baseline_matches_expected"] = *pair.baseline_matches_expected;
  if (pair.candidate_matches_expected) entry["candidate_matches_expected"] = *pair.candidate_matches_expected;
  boost::json::array divergences;
  for (const auto& divergence : pair.divergences) divergences.push_back(divergence_json(divergence));
  entry["divergences"] = std::move(divergences);
  if (!pair.divergences.empty()) entry["parts_changed"] = diff::parts_changed(pair.divergences);
  return entry;
}

boost::json::object run_json(const diff::RunComparison& run) {
  boost::json::object object;
  object["name"] = run.name;
  object["alignment"] = diff::to_string(run.alignment);
  object["pairs_with_same_key"] = run.pairs_with_same_key;
  object["alignment_note"] = run.alignment_note.empty() ? boost::json::value(nullptr)
                                                        : boost::json::value(run.alignment_note);
  object["exchanges"] = run.exchanges;
  object["aligned"] = run.aligned;
  object["identical"] = run.identical;
  object["divergent"] = run.divergent;
  object["near_ties"] = run.near_ties;
  object["real_changes"] = run.real_changes;
  object["unknown_changes"] = run.unknown_changes;
  object["errors"] = run.errors;
  object["missing_in_candidate"] = run.missing_in_candidate;
  object["missing_in_baseline"] = run.missing_in_baseline;
  object["not_compared"] = run.not_compared;
  boost::json::object why;
  for (const auto& [reason, count] : run.not_compared_why) why[reason] = count;
  object["not_compared_why"] = std::move(why);
  object["matches_expected"] = optional_json(run.matches_expected);
  object["with_expected"] = optional_json(run.with_expected);
  boost::json::array failing;
  for (auto id : run.failing_expected) failing.push_back(id);
  object["failing_expected"] = std::move(failing);
  auto [differ, total] = differ_count(run);
  object["differ"] = differ;
  object["differ_rate_upper95"] = json_number(clopper_pearson_upper(differ, total));
  object["matrix"] = run.matrix;
  object["by_in_flight"] = in_flight_json(in_flight_buckets(run.by_in_flight));
  object["by_cache"] = by_cache_json(run.by_server);
  object["by_preempted"] = by_preempted_json(run.by_server);
  boost::json::array pairs;
  for (const auto& pair : run.pairs) pairs.push_back(pair_json(pair));
  object["pairs"] = std::move(pairs);
  return object;
}

boost::json::object across_runs_json(const Result& result) {
  boost::json::object across;
  boost::json::object histogram;
  for (const auto& [unique, count] : result.unique_completions_histogram) histogram[std::to_string(unique)] = count;
  across["requests_by_distinct_completions"] = std::move(histogram);
  boost::json::array requests;
  for (const auto& request : result.requests) {
    boost::json::object entry;
    entry["baseline_id"] = request.baseline_id;
    entry["baseline_position"] = request.baseline_position;
    boost::json::array groups;
    for (const auto& group : request.groups) {
      boost::json::array members;
      for (std::size_t run : group) members.push_back(boost::json::value(run_label(run, result)));
      groups.push_back(std::move(members));
    }
    entry["groups"] = std::move(groups);
    requests.push_back(std::move(entry));
  }
  across["requests"] = std::move(requests);
  boost::json::object buckets;
  for (const auto& [label, count] : position_buckets(result.first_divergence_positions)) buckets[label] = count;
  across["first_divergence_buckets"] = std::move(buckets);
  boost::json::array positions;
  for (std::size_t position : result.first_divergence_positions) positions.push_back(position);
  across["first_divergence_positions"] = std::move(positions);
  return across;
}

}  // namespace

void render_diff_json(const Result& result, const DiffRenderOptions& options, std::ostream& out) {
  boost::json::object root;
  root["schema_version"] = kJsonSchemaVersion;
  root["baseline"] = result.baseline_name;
  root["baseline_exchanges"] = result.baseline_exchanges;
  root["baseline_matches_expected"] = optional_json(result.baseline_matches_expected);
  root["baseline_with_expected"] = optional_json(result.baseline_with_expected);
  boost::json::array baseline_failing;
  for (auto id : result.baseline_failing_expected) baseline_failing.push_back(id);
  root["baseline_failing_expected"] = std::move(baseline_failing);
  boost::json::object settings;
  settings["fail_on"] = fail_on_name(options.fail_on);
  settings["max_divergent"] = options.max_divergent;
  settings["near_tie"] = options.near_tie;
  settings["expect"] = options.expect;
  root["settings"] = std::move(settings);
  boost::json::array runs;
  for (const auto& run : result.runs) runs.push_back(run_json(run));
  root["runs"] = std::move(runs);
  root["across_runs"] = across_runs_json(result);
  boost::json::array warnings;
  for (const auto& warning : result.warnings) warnings.push_back(boost::json::value(warning));
  root["warnings"] = std::move(warnings);
  root["failing"] = diff::failing_outputs(result, options.fail_on);
  root["exit_code"] = diff_exit_code(result, options);
  out << json_text(root) << "\n";
}

}  // namespace retrace::report
