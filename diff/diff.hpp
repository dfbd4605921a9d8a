// Diff: align the exchanges of a baseline run and candidate runs of the same traffic, and for
// every output that differs find the first divergent token.
//
// Comparison is on token ids where both sides have them; otherwise on the concatenated bytes,
// mapped back to the token (delta) index on each side, so that the same text chunked differently
// (servers coalesce tokens under load) is identical, not divergent.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "format/trace.hpp"

namespace retrace::diff {

// Default --near-tie: a divergence whose two candidates' logprobs are within this margin at the
// divergent position is classified as numeric noise (a near-tie flip), otherwise a real change.
inline constexpr double kDefaultNearTieMargin = 0.05;

enum class Match : std::uint8_t { exact, normalized, contains, regex, json_field };

struct Options {
  std::size_t context = 5;  // tokens before and after the divergence
  double near_tie = kDefaultNearTieMargin;
  bool expect = false;      // match outputs against the traces' expected answers
  Match match = Match::exact;
  std::string match_arg;    // the regex, or the JSON field name
};

// How two aligned outputs compare.
enum class Verdict : std::uint8_t {
  identical,
  divergent,
  error,          // an error on either side (never "identical")
  missing,        // present on one side only
};
enum class Basis : std::uint8_t { token_ids, bytes };
enum class Classification : std::uint8_t { near_tie, real_change, unknown };

struct TokenView {
  std::int32_t id = -1;
  std::string bytes;
  std::optional<float> logprob;
  std::vector<Alternative> top;
};

struct Divergence {
  std::uint32_t choice = 0;
  Basis basis = Basis::bytes;
  std::string basis_note;      // e.g. "ids on baseline only: compared bytes"
  std::size_t baseline_index = 0, candidate_index = 0;  // token index on each side
  std::size_t byte_offset = 0;                          // in the concatenated output
  TokenView baseline_token, candidate_token;            // at the divergence (empty at end)
  std::vector<TokenView> baseline_before, baseline_after, candidate_before, candidate_after;
  std::optional<double> margin;  // |logprob(a) - logprob(b)| at the divergent position
  Classification classification = Classification::unknown;
  std::size_t common_suffix_bytes = 0;
  std::size_t edit_distance = 0;  // Myers, over the remaining tokens
  std::size_t baseline_tokens = 0, candidate_tokens = 0;
  std::string baseline_finish, candidate_finish;
};

struct PairResult {
  std::uint64_t baseline_id = 0, candidate_id = 0;  // exchange ids (when present)
  bool has_baseline = true, has_candidate = true;
  RequestKey key;
  Verdict verdict = Verdict::identical;
  std::string error;  // for Verdict::error: which side, kind and message
  std::vector<Divergence> divergences;  // one per differing choice
  std::optional<bool> baseline_matches_expected, candidate_matches_expected;
};

struct RunComparison {
  std::string name;  // the candidate trace's path or run label
  std::size_t aligned = 0, identical = 0, divergent = 0, errors = 0, missing = 0;
  std::size_t near_ties = 0, real_changes = 0;
  std::optional<std::size_t> matches_expected;  // with Options::expect
  std::vector<PairResult> pairs;
};

struct Result {
  std::string baseline_name;
  std::optional<std::size_t> baseline_matches_expected;
  std::size_t baseline_exchanges = 0;
  std::vector<RunComparison> runs;
  // N-way: per baseline exchange, how many unique completions across all runs and who shares them
  struct Request {
    std::uint64_t baseline_id = 0;
    std::size_t unique_completions = 0;
    std::vector<std::vector<std::size_t>> groups;  // run indices (0 = baseline) per completion
  };
  std::vector<Request> requests;
  std::vector<std::size_t> first_divergence_histogram;  // bucketed token index
};

// Compares candidate traces against a baseline. Throws on unreadable traces.
Result compare(const LoadedTrace& baseline, const std::vector<const LoadedTrace*>& candidates,
               const std::vector<std::string>& candidate_names, const Options& options);

// Whether `output` matches `expected` under the options' matcher.
bool matches_expected(const std::string& output, const std::string& expected, const Options& options);

}  // namespace retrace::diff
