// The per-exchange summary and the alignment keys (see summary.hpp).
#include "diff/summary.hpp"

namespace retrace::diff {

void Summarizer::summarize(const ExchangeOutputs& exchange, const std::string* fallback_expected, Summary& out) {
  out.id = exchange.id;
  out.in_flight_at_send = exchange.in_flight_at_send;
  out.cached_tokens = exchange.cached_tokens;
  out.preemptions = exchange.preemptions;
  out.source_id = exchange.source_id;
  out.key = exchange.key;
  out.occurrence = occurrences_[exchange.key]++;
  out.source_occurrence = exchange.source_id ? source_occurrences_[*exchange.source_id]++ : 0;
  out.failed = exchange.error.kind != ErrorKind::none;
  out.error.clear();
  if (out.failed) {
    out.error = std::string(to_string(exchange.error.kind));
    if (!exchange.error.message.empty()) out.error += ": " + exchange.error.message;
  }
  out.not_compared.clear();
  // A POST with no output decoded: nothing to compare (diff.hpp). Other methods carry none.
  if (!out.failed && exchange.choices.empty() && exchange.method == "POST") {
    std::string_view path = exchange.target;
    path = path.substr(0, path.find('?'));
    out.not_compared = "no output decoded from POST " + std::string(path) +
                       (exchange.dialect.empty() ? " (a response shape retrace does not decode)" : "");
  }
  out.choices.resize(exchange.choices.size());
  XXH3_state_t* completion = state_.get();
  XXH3_64bits_reset(completion);
  for (std::size_t i = 0; i < exchange.choices.size(); ++i) {
    const ChoiceOutput& choice = exchange.choices[i];
    ChoiceDigest& digest = out.choices[i];
    // Which part this is seeds both hashes, so the same bytes in another part (a tool call's
    // arguments, an answer) or under another function's name hash apart.
    std::uint64_t identity[3] = {choice.index, std::uint64_t(choice.part) << 32 | choice.tool_call,
                                 XXH3_64bits(choice.tool_name.data(), choice.tool_name.size())};
    const std::uint64_t seed = XXH3_64bits(identity, sizeof identity);
    digest.ids = has_token_ids(choice) && choice.values.empty();
    digest.byte_hash = choice.values.empty()
                           ? XXH3_64bits_withSeed(choice.bytes.data(), choice.bytes.size(), seed)
                           : XXH3_64bits_withSeed(choice.values.data(), choice.values.size() * sizeof(double), seed);
    digest.id_hash =
        digest.ids ? XXH3_64bits_withSeed(choice.ids.data(), choice.ids.size() * sizeof(std::int32_t), seed) : 0;
    std::uint64_t framing[2] = {digest.byte_hash, choice.bytes.size()};
    XXH3_64bits_update(completion, framing, sizeof framing);
  }
  out.completion_hash = XXH3_64bits_digest(completion);
  out.expected.reset();
  out.matches_expected.reset();
  if (options_.expect) {
    if (exchange.expected) out.expected = exchange.expected;
    else if (fallback_expected) out.expected = *fallback_expected;
    if (out.expected && !out.failed)
      out.matches_expected = matches_expected(output_text(exchange), *out.expected, options_);
    else if (out.expected)
      out.matches_expected = false;
  }
}

void Summarizer::restart() {
  occurrences_.clear();
  source_occurrences_.clear();
}

std::uint64_t key_occurrence_hash(const Summary& summary) {
  const std::uint64_t parts[3] = {summary.key.hi, summary.key.lo, summary.occurrence};
  return XXH3_64bits(parts, sizeof parts);
}

bool same_output(const Summary& baseline, const Summary& candidate) {
  if (baseline.choices.size() != candidate.choices.size()) return false;
  for (std::size_t i = 0; i < baseline.choices.size(); ++i) {
    const auto& a = baseline.choices[i];
    const auto& b = candidate.choices[i];
    bool equal = a.ids && b.ids ? a.id_hash == b.id_hash : a.byte_hash == b.byte_hash;
    if (!equal) return false;
  }
  return true;
}

Alignment choose_alignment(bool baseline_has_sources, bool candidate_has_sources) {
  return baseline_has_sources && candidate_has_sources ? Alignment::source_to_source
         : candidate_has_sources                      ? Alignment::source_to_id
         : baseline_has_sources                       ? Alignment::id_to_source
                                                      : Alignment::key_occurrence;
}

AlignKey baseline_key(const Summary& summary, Alignment alignment) {
  switch (alignment) {
    case Alignment::source_to_source:
      return {summary.source_id.value_or(~0ull), 1, summary.source_occurrence};
    case Alignment::id_to_source:
      return {summary.source_id.value_or(~0ull), 1, 0};
    case Alignment::source_to_id:
      return {summary.id, 1, 0};
    case Alignment::key_occurrence:
      return {summary.key.hi, summary.key.lo, summary.occurrence};
  }
  return {};
}

std::optional<AlignKey> candidate_key(const Summary& summary, Alignment alignment) {
  switch (alignment) {
    case Alignment::source_to_source:
      if (!summary.source_id) return std::nullopt;
      return AlignKey{*summary.source_id, 1, summary.source_occurrence};
    case Alignment::source_to_id:
      if (!summary.source_id) return std::nullopt;
      return AlignKey{*summary.source_id, 1, 0};
    case Alignment::id_to_source:
      return AlignKey{summary.id, 1, 0};
    case Alignment::key_occurrence:
      return AlignKey{summary.key.hi, summary.key.lo, summary.occurrence};
  }
  return std::nullopt;
}

const BaselineIndex::Map& BaselineIndex::map(Alignment alignment, const std::vector<Summary>& base) {
  Built& built = maps_[int(alignment)];
  if (built.indexed == 0) built.map.reserve(base.size());
  for (; built.indexed < base.size(); ++built.indexed)
    built.map.try_emplace(baseline_key(base[built.indexed], alignment), built.indexed);  // first wins
  return built.map;
}

}  // namespace retrace::diff
