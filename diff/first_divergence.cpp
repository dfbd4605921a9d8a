// The pure core of diff: first divergence of two token streams, Myers distance, answer matchers.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <regex>
#include <stdexcept>

#include <boost/json.hpp>

#include "diff/diff.hpp"
#include "base/ascii.hpp"
#include "format/json.hpp"

namespace retrace::diff {

std::string_view to_string(Match match) {
  switch (match) {
    case Match::exact: return "exact";
    case Match::normalized: return "normalized";
    case Match::contains: return "contains";
    case Match::regex: return "regex";
    case Match::json_field: return "json";
  }
  return "?";
}
std::string_view to_string(Verdict verdict) { return enum_name(verdict, "?"); }
std::string_view to_string(Basis basis) {
  return basis == Basis::token_ids ? "token_ids" : "bytes";
}
std::string_view to_string(Classification classification) {
  return enum_name(classification, "?");
}
std::string_view to_string(Alignment alignment) {
  switch (alignment) {
    case Alignment::source_to_source: return "source id <-> source id";
    case Alignment::source_to_id: return "candidate source id <-> baseline id";
    case Alignment::id_to_source: return "candidate id <-> baseline source id";
    case Alignment::key_occurrence: return "request key + occurrence";
  }
  return "?";
}

std::optional<std::pair<Match, std::string>> parse_matcher(std::string_view spec) {
  if (spec == "exact") return std::pair{Match::exact, std::string()};
  if (spec == "normalized") return std::pair{Match::normalized, std::string()};
  if (spec == "contains") return std::pair{Match::contains, std::string()};
  if (spec.starts_with("regex:")) return std::pair{Match::regex, std::string(spec.substr(6))};
  if (spec.starts_with("json:") && spec.size() > 5)
    return std::pair{Match::json_field, std::string(spec.substr(5))};
  return std::nullopt;
}

namespace {
// The one rule for both forms of a choice: an empty stream, or ids in kind and in every token.
template <class EveryId>
bool ids_basis(TokenKind kind, bool empty, EveryId every_id_present) {
  if (empty) return true;
  if (kind != TokenKind::token_ids && kind != TokenKind::logprob_tokens) return false;
  return every_id_present();
}
}  // namespace

bool has_token_ids(const Choice& choice) {
  return ids_basis(choice.kind, choice.tokens.empty(), [&] {
    return std::all_of(choice.tokens.begin(), choice.tokens.end(), [](const Token& token) { return token.id >= 0; });
  });
}

bool has_token_ids(const ChoiceOutput& choice) {
  return ids_basis(choice.kind, choice.ids.empty(), [&] {
    return std::all_of(choice.ids.begin(), choice.ids.end(), [](std::int32_t id) { return id >= 0; });
  });
}

namespace {

TokenView view_of(const Choice& choice, const Token& token) {
  TokenView view;
  view.id = token.id;
  view.bytes = token.bytes;
  if (token.has_logprob) view.logprob = token.logprob;
  const auto top = choice.top(token);
  view.top.assign(top.begin(), top.end());
  return view;
}

void fill_context(const Choice& choice, std::size_t index, std::size_t context,
                  std::optional<TokenView>& at, std::vector<TokenView>& before,
                  std::vector<TokenView>& after) {
  const auto& tokens = choice.tokens;
  std::size_t from = index > context ? index - context : 0;
  for (std::size_t i = from; i < std::min(index, tokens.size()); ++i) before.push_back(view_of(choice, tokens[i]));
  if (index < tokens.size()) {
    at = view_of(choice, tokens[index]);
    for (std::size_t i = index + 1; i < tokens.size() && i <= index + context; ++i)
      after.push_back(view_of(choice, tokens[i]));
  }
}

bool same_token(const Alternative& alternative, std::int32_t id, std::string_view bytes) {
  if (alternative.id >= 0 && id >= 0) return alternative.id == id;
  return alternative.bytes == bytes;
}
bool same_token(const Alternative& alternative, const TokenView& token) {
  return same_token(alternative, token.id, token.bytes);
}

std::optional<float> logprob_in(const std::vector<Alternative>& top, const TokenView& token) {
  for (const auto& alternative : top)
    if (same_token(alternative, token)) return alternative.logprob;
  return std::nullopt;
}

// The margin read from one side's distribution: that side chose `chosen`; `other` is the token
// the other side chose at the same position.
struct Margin {
  double value = 0;
  bool lower_bound = false;
};
std::optional<Margin> margin_from(const TokenView& chosen, const TokenView& other) {
  std::optional<float> chosen_logprob = chosen.logprob;
  if (!chosen_logprob) chosen_logprob = logprob_in(chosen.top, chosen);
  if (!chosen_logprob) return std::nullopt;
  if (auto other_logprob = logprob_in(chosen.top, other))
    return Margin{std::fabs(double(*chosen_logprob) - double(*other_logprob)), false};
  if (chosen.top.empty()) return std::nullopt;
  // The other token is not among the listed alternatives, so it is no likelier than the least
  // likely listed one.
  float worst = chosen.top.front().logprob;
  for (const auto& alternative : chosen.top) worst = std::min(worst, alternative.logprob);
  return Margin{std::max(0.0, double(*chosen_logprob) - double(worst)), true};
}

void classify(Divergence& divergence, double near_tie) {
  if (!divergence.baseline_token || !divergence.candidate_token) return;
  auto from_baseline = margin_from(*divergence.baseline_token, *divergence.candidate_token);
  auto from_candidate = margin_from(*divergence.candidate_token, *divergence.baseline_token);
  std::optional<Margin> margin;
  if (from_baseline && !from_baseline->lower_bound) margin = from_baseline;
  else if (from_candidate && !from_candidate->lower_bound) margin = from_candidate;
  else if (from_baseline && from_candidate)
    margin = from_baseline->value >= from_candidate->value ? from_baseline : from_candidate;
  else if (from_baseline) margin = from_baseline;
  else margin = from_candidate;
  if (!margin) return;
  divergence.margin = margin->value;
  divergence.margin_is_lower_bound = margin->lower_bound;
  if (margin->value >= near_tie) divergence.classification = Classification::real_change;
  else if (!margin->lower_bound) divergence.classification = Classification::near_tie;
}

// Index of the token holding byte `offset`, given each token's end offset; the token count when
// the stream ends before it. Empty tokens hold no byte and are never reported.
std::size_t token_holding(const std::vector<std::size_t>& ends, std::size_t offset) {
  return std::size_t(std::upper_bound(ends.begin(), ends.end(), offset) - ends.begin());
}

template <typename Equal>
EditDistance myers(std::size_t n, std::size_t m, std::size_t max_d, Equal equal) {
  max_d = std::min(max_d, n + m);
  if ((n > m ? n - m : m - n) > max_d) return {max_d, true};
  // v[k + offset] = furthest x on diagonal k = x - y.
  const std::ptrdiff_t offset = std::ptrdiff_t(max_d) + 1;
  std::vector<std::size_t> v(2 * max_d + 3, 0);
  for (std::size_t d = 0; d <= max_d; ++d) {
    const std::ptrdiff_t dd = std::ptrdiff_t(d);
    for (std::ptrdiff_t k = -dd; k <= dd; k += 2) {
      std::size_t x;
      if (k == -dd || (k != dd && v[k - 1 + offset] < v[k + 1 + offset])) x = v[k + 1 + offset];
      else x = v[k - 1 + offset] + 1;
      if (std::ptrdiff_t(x) - k < 0) continue;  // off the grid
      std::size_t y = std::size_t(std::ptrdiff_t(x) - k);
      while (x < n && y < m && equal(x, y)) ++x, ++y;
      v[k + offset] = x;
      if (x >= n && y >= m) return {d, false};
    }
  }
  return {max_d, true};
}

}  // namespace

EditDistance myers_distance(const std::vector<std::uint64_t>& a, const std::vector<std::uint64_t>& b,
                            std::size_t max_d) {
  return myers(a.size(), b.size(), max_d, [&](std::size_t x, std::size_t y) { return a[x] == b[y]; });
}

EditDistance myers_distance(std::string_view a, std::string_view b, std::size_t max_d) {
  return myers(a.size(), b.size(), max_d, [&](std::size_t x, std::size_t y) { return a[x] == b[y]; });
}

std::optional<Divergence> first_divergence(const Choice& baseline, const Choice& candidate,
                                           const Options& options) {
  Divergence divergence;
  divergence.choice = baseline.index;
  divergence.baseline_tokens = baseline.tokens.size();
  divergence.candidate_tokens = candidate.tokens.size();
  divergence.baseline_finish = baseline.finish_reason;
  divergence.candidate_finish = candidate.finish_reason;
  for (const auto& token : baseline.tokens) divergence.baseline_bytes += token.bytes.size();
  for (const auto& token : candidate.tokens) divergence.candidate_bytes += token.bytes.size();

  const bool baseline_ids = has_token_ids(baseline), candidate_ids = has_token_ids(candidate);
  if (baseline_ids && candidate_ids && !(baseline.tokens.empty() && candidate.tokens.empty())) {
    divergence.basis = Basis::token_ids;
    const auto& a = baseline.tokens;
    const auto& b = candidate.tokens;
    std::size_t i = 0;
    while (i < a.size() && i < b.size() && a[i].id == b[i].id) ++i;
    if (i == a.size() && i == b.size()) return std::nullopt;
    divergence.baseline_index = divergence.candidate_index = i;
    for (std::size_t t = 0; t < i; ++t) divergence.byte_offset += a[t].bytes.size();
    std::size_t suffix = 0;
    while (suffix < a.size() - i && suffix < b.size() - i &&
           a[a.size() - 1 - suffix].id == b[b.size() - 1 - suffix].id)
      ++suffix;
    divergence.common_suffix = suffix;
    std::vector<std::uint64_t> rest_a, rest_b;
    for (std::size_t t = i; t < a.size() - suffix; ++t) rest_a.push_back(std::uint64_t(a[t].id));
    for (std::size_t t = i; t < b.size() - suffix; ++t) rest_b.push_back(std::uint64_t(b[t].id));
    auto distance = myers_distance(rest_a, rest_b, options.max_edit_distance);
    divergence.edit_distance = distance.distance;
    divergence.edit_distance_capped = distance.capped;
  } else {
    divergence.basis = Basis::bytes;
    if (baseline_ids != candidate_ids)
      divergence.basis_note = baseline_ids ? "token ids on the baseline only: compared bytes"
                                           : "token ids on the candidate only: compared bytes";
    std::string a, b;
    std::vector<std::size_t> ends_a, ends_b;
    a.reserve(divergence.baseline_bytes);
    b.reserve(divergence.candidate_bytes);
    for (const auto& token : baseline.tokens) a += token.bytes, ends_a.push_back(a.size());
    for (const auto& token : candidate.tokens) b += token.bytes, ends_b.push_back(b.size());
    auto [at_a, at_b] = std::mismatch(a.begin(), a.end(), b.begin(), b.end());
    std::size_t offset = std::size_t(at_a - a.begin());
    if (at_a == a.end() && at_b == b.end()) return std::nullopt;
    divergence.byte_offset = offset;
    divergence.baseline_index = token_holding(ends_a, offset);
    divergence.candidate_index = token_holding(ends_b, offset);
    std::size_t suffix = 0;
    while (suffix < a.size() - offset && suffix < b.size() - offset &&
           a[a.size() - 1 - suffix] == b[b.size() - 1 - suffix])
      ++suffix;
    divergence.common_suffix = suffix;
    auto distance = myers_distance(std::string_view(a).substr(offset, a.size() - offset - suffix),
                                   std::string_view(b).substr(offset, b.size() - offset - suffix),
                                   options.max_edit_distance);
    divergence.edit_distance = distance.distance;
    divergence.edit_distance_capped = distance.capped;
  }
  fill_context(baseline, divergence.baseline_index, options.context, divergence.baseline_token,
               divergence.baseline_before, divergence.baseline_after);
  fill_context(candidate, divergence.candidate_index, options.context, divergence.candidate_token,
               divergence.candidate_before, divergence.candidate_after);
  classify(divergence, options.near_tie);
  return divergence;
}

std::string output_text(const Exchange& exchange) {
  const Choice* answer = first_answer(exchange.choices);
  return answer ? retrace::output_text(*answer) : std::string();
}

std::string_view output_text(const ExchangeOutputs& exchange) {
  const ChoiceOutput* answer = first_answer(exchange.choices);
  return answer ? std::string_view(answer->bytes) : std::string_view();
}

std::string normalize_answer(std::string_view text) {
  std::string out;
  bool pending_space = false;
  for (char c : text) {
    unsigned char u = static_cast<unsigned char>(c);
    if (std::isspace(u)) {
      pending_space = !out.empty();
      continue;
    }
    if (pending_space) out += ' ', pending_space = false;
    out += ascii_lower(c);
  }
  static constexpr std::string_view kTrailing = ".,;:!?\"'`)]} ";
  while (!out.empty() && kTrailing.find(out.back()) != std::string_view::npos) out.pop_back();
  return out;
}

namespace {

std::string_view trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  return text;
}

// Models often wrap JSON in a Markdown code fence; look inside it.
std::string_view strip_code_fence(std::string_view text) {
  text = trim(text);
  if (!text.starts_with("```")) return text;
  auto first_newline = text.find('\n');
  auto closing = text.rfind("```");
  if (first_newline == std::string_view::npos || closing <= first_newline) return text;
  return trim(text.substr(first_newline + 1, closing - first_newline - 1));
}

const boost::json::value* find_field(const boost::json::value& root, std::string_view path) {
  const boost::json::value* at = &root;
  while (!path.empty()) {
    auto dot = path.find('.');
    std::string_view part = path.substr(0, dot);
    path = dot == std::string_view::npos ? std::string_view() : path.substr(dot + 1);
    if (const auto* object = at->if_object()) {
      auto it = object->find(part);
      if (it == object->end()) return nullptr;
      at = &it->value();
    } else if (const auto* array = at->if_array()) {
      std::size_t index = 0;
      if (part.empty() || !std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; }))
        return nullptr;
      for (char c : part) index = index * 10 + std::size_t(c - '0');
      if (index >= array->size()) return nullptr;
      at = &(*array)[index];
    } else {
      return nullptr;
    }
  }
  return at;
}

bool json_field_matches(std::string_view output, std::string_view expected, std::string_view field) {
  boost::system::error_code ec;
  auto parsed = boost::json::parse(strip_code_fence(output), ec);
  if (ec) return false;
  const auto* value = find_field(parsed, field);
  if (!value) return false;
  if (const auto* string = value->if_string()) return trim(*string) == trim(expected);
  // A number, bool, object...: compare as JSON values, so 42 matches "42" and 42.0.
  auto expected_value = boost::json::parse(expected, ec);
  if (ec) return false;
  if (value->is_number() && expected_value.is_number())
    return value->to_number<double>() == expected_value.to_number<double>();
  return *value == expected_value;
}

}  // namespace

bool matches_expected(std::string_view output, std::string_view expected, const Options& options) {
  switch (options.match) {
    case Match::exact:
      return output == expected;
    case Match::normalized:
      return normalize_answer(output) == normalize_answer(expected);
    case Match::contains: {
      auto needle = normalize_answer(expected);
      return normalize_answer(output).find(needle) != std::string::npos;
    }
    case Match::regex: {
      // RE extracts the answer from the output (its first capture group, else the whole match),
      // which is then compared with the expected answer, normalized.
      std::regex pattern(options.match_arg, std::regex::ECMAScript);
      std::match_results<std::string_view::const_iterator> match;
      if (!std::regex_search(output.begin(), output.end(), match, pattern)) return false;
      std::string extracted = match.size() > 1 && match[1].matched ? match[1].str() : match[0].str();
      return normalize_answer(extracted) == normalize_answer(expected);
    }
    case Match::json_field:
      return json_field_matches(output, expected, options.match_arg);
  }
  return false;
}

std::optional<double> margin_to_next(const Choice& choice, const Token& token) {
  std::optional<float> chosen;
  if (token.has_logprob) chosen = token.logprob;
  std::optional<float> next;
  for (const auto& alternative : choice.top(token)) {
    if (same_token(alternative, token.id, token.bytes)) {
      if (!chosen) chosen = alternative.logprob;
      continue;
    }
    if (!next || alternative.logprob > *next) next = alternative.logprob;
  }
  if (!chosen || !next) return std::nullopt;
  return double(*chosen) - double(*next);
}

}  // namespace retrace::diff
