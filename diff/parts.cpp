// Outputs compared part by part (diff.hpp): pairing the parts of two outputs, a tool call's name,
// embeddings by value, and the words reports use for which part changed.
#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "diff/diff.hpp"

namespace retrace::diff {

namespace {

using PartKey = std::tuple<std::uint32_t, int, std::uint32_t>;  // index, generation rank, call

PartKey key_of(const Choice& choice) { return {choice.index, part_rank(choice.part), choice.tool_call}; }

std::optional<Divergence> compare_embeddings(const Choice& baseline, const Choice& candidate, const Options& options) {
  const auto& a = baseline.values;
  const auto& b = candidate.values;
  Divergence divergence;
  divergence.baseline_tokens = a.size();
  divergence.candidate_tokens = b.size();
  std::size_t differing = 0;
  double largest = 0;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    const double difference = std::fabs(a[i] - b[i]);
    if (difference == 0) continue;
    if (differing++ == 0) divergence.baseline_index = divergence.candidate_index = i;
    largest = std::isnan(difference) ? difference : std::max(largest, difference);
  }
  if (a.size() != b.size()) {
    if (differing == 0) divergence.baseline_index = divergence.candidate_index = std::min(a.size(), b.size());
    divergence.basis_note = "vectors of " + std::to_string(a.size()) + " and " + std::to_string(b.size()) + " values";
    divergence.classification = Classification::real_change;
    divergence.values_differing = differing;
    return divergence;
  }
  if (differing == 0 || largest <= options.embedding_tolerance) return std::nullopt;
  divergence.largest_difference = largest;
  divergence.values_differing = differing;
  divergence.classification = options.embedding_tolerance > 0 ? Classification::real_change : Classification::unknown;
  return divergence;
}

// A stream of one token holding `text`, so a name is compared (and shown) as a stream is.
Choice name_stream(const Choice& call) {
  Choice stream;
  stream.index = call.index;
  stream.kind = TokenKind::text_deltas;
  stream.finish_reason = call.finish_reason;
  if (!call.tool_name.empty()) stream.tokens.emplace_back().bytes = call.tool_name;
  return stream;
}

std::optional<Divergence> compare_part(const Choice& baseline, const Choice& candidate, const Options& options) {
  if (baseline.part == Part::embedding || candidate.part == Part::embedding)
    return compare_embeddings(baseline, candidate, options);
  if (baseline.part == Part::tool_call && baseline.tool_name != candidate.tool_name) {
    // The name comes before the arguments: a different function is the first difference.
    auto divergence = first_divergence(name_stream(baseline), name_stream(candidate), options);
    divergence->basis_note = "the function's name differs";
    divergence->classification = Classification::real_change;
    return divergence;
  }
  return first_divergence(baseline, candidate, options);
}

}  // namespace

std::vector<Divergence> compare_parts(const std::vector<Choice>& baseline, const std::vector<Choice>& candidate,
                                      const Options& options) {
  // Each side's parts by key; traces keep them sorted, but pairing must not depend on it.
  std::map<PartKey, std::pair<const Choice*, const Choice*>> pairs;
  for (const Choice& choice : baseline) pairs[key_of(choice)].first = &choice;
  for (const Choice& choice : candidate) pairs[key_of(choice)].second = &choice;
  std::vector<Divergence> divergences;
  for (const auto& [key, sides] : pairs) {
    const Choice* present = sides.first ? sides.first : sides.second;
    Choice empty;
    empty.index = present->index;
    empty.part = present->part;
    empty.tool_call = present->tool_call;
    auto divergence = compare_part(sides.first ? *sides.first : empty, sides.second ? *sides.second : empty, options);
    if (!divergence) continue;
    divergence->choice = present->index;
    divergence->part = present->part;
    divergence->tool_call = present->tool_call;
    divergence->tool_name = present->tool_name;
    const char* absent = !sides.first ? "on the baseline" : !sides.second ? "on the candidate" : nullptr;
    if (absent) {
      divergence->basis_note = std::string(present->part == Part::content ? "choice" : "part") + " absent " + absent;
    }
    divergences.push_back(std::move(*divergence));
  }
  return divergences;
}

std::string part_name(const Divergence& divergence, bool with_choice) {
  std::string name = with_choice ? "choice " + std::to_string(divergence.choice) + " " : "";
  switch (divergence.part) {
    case Part::content: return name + "answer";
    case Part::reasoning: return name + "reasoning";
    case Part::refusal: return name + "refusal";
    case Part::embedding: return name + "embedding";
    case Part::tool_call:
      name += "tool call " + std::to_string(divergence.tool_call);
      return divergence.tool_name.empty() ? name : name + " (" + divergence.tool_name + ")";
  }
  return name + "output";
}

std::string parts_changed(const std::vector<Divergence>& divergences) {
  if (divergences.empty()) return {};
  const bool several_choices = std::any_of(divergences.begin(), divergences.end(), [&](const Divergence& d) {
    return d.choice != divergences.front().choice;
  });
  const bool with_choice = several_choices || divergences.front().choice != 0;
  std::string first = part_name(divergences.front(), with_choice);
  if (divergences.size() == 1) {
    if (divergences.front().part == Part::reasoning)
      return first + " changed, " + (with_choice ? "its answer" : "answer") + " the same";
    return first + " changed";
  }
  std::string rest;
  for (std::size_t i = 1; i < divergences.size(); ++i)
    rest += (i > 1 ? ", " : "") + part_name(divergences[i], with_choice);
  return first + " changed first, then " + rest;
}

}  // namespace retrace::diff
