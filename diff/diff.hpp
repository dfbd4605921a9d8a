// Diff: align the exchanges of a baseline run and candidate runs of the same traffic, and for
// every output that differs find the first divergent token.
//
// Alignment (per baseline/candidate pair of traces, decided from each trace's first exchange):
//   both sides carry source ids (both replays of one trace)  (candidate.source_id, occurrence) <->
//                                                              (baseline.source_id, occurrence)
//   only the candidate does (baseline is the replayed trace)  candidate.source_id <-> baseline.id
//   only the baseline does                                    candidate.id        <-> baseline.source_id
//   neither                                                   (request key, occurrence number)
// The occurrence with source ids counts earlier exchanges of the same trace with the same source id,
// in file order: a run that cycles a short trace (replay --requests N) re-issues each source
// several times, and its k-th copy of a question pairs with the baseline's k-th copy of the same
// question (never with another question). The other modes pair each id once; further copies are
// missing. Exchanges on one side only are reported as missing; an error on either side is its own verdict.
// Ids are checked against the request keys: source ids name the exchanges of the trace that was
// replayed, which need not be the baseline (a proxy's recording of a replay has ids of its own; a
// replay of a replay names the replay's ids, not its source's). Of the candidate exchanges the ids
// pair with another request (or with none), those whose own (request key, occurrence) is elsewhere
// in the baseline say the ids are wrong; those whose key is nowhere in it are a replay that
// rewrote the bodies it sent (--model, --token-ids, streaming, --set), which key alignment could
// not pair either. When the first outnumber the second, the run is aligned by (request key,
// occurrence) instead; RunComparison::alignment_note says which was used and why.
//
// Parts: each output choice is compared part by part (format/trace.hpp): its reasoning, its answer
// (content), its refusal, each tool call (by position: the function's name, then its arguments),
// each embedding. Parts pair up by (choice index, part, tool call position); a part absent on one
// side compares as empty. So a changed boundary between reasoning and answer is a change, and a
// tool call is never equal to the same characters as text. A pair's parts_changed() says which
// parts differ, the first in generation order first ("reasoning changed, answer the same").
// Embeddings compare numerically: the largest absolute difference between the two vectors; one
// within Options::embedding_tolerance is identical; beyond it, a real change when a tolerance was
// given, unknown otherwise (no tolerance: any difference shows, and nothing says it is noise).
//
// Not compared: an exchange without an error whose response decoded to no output at all (a POST
// to an endpoint retrace does not decode, a body that was not what its dialect says) is neither
// identical nor divergent: it is counted as not compared, with the reason, and fails the exit
// policy as a divergence does (nothing says it is the same). Requests other than POST (model
// listings, health checks) carry no output and pair as identical when both sides have none.
//
// Comparison, per part (an absent choice or part compares as empty):
//   * basis token_ids when both sides' streams are token_ids with every id present: the first
//     index whose ids differ (or where one side ends);
//   * otherwise basis bytes: the token bytes are concatenated on each side, the first differing
//     byte found, and mapped back to the index of the token (text delta) that contains it on each
//     side. So the same text chunked differently is identical, and the reported indices live in
//     each side's own delta index space: with coalesced deltas, the index is the delta that holds
//     the first differing byte (the end of the stream, i.e. the token count, when that side ended).
//     When only one side has ids, Divergence::basis_note says so.
//   * fast path: an xxh3 hash of each stream (ids, and the concatenated bytes) decides identity;
//     only differing pairs are examined token by token.
//
// Margin and classification at the divergent position (logprobs in nats):
//   margin = |logprob(baseline token) - logprob(candidate token)| read from the baseline's top
//   alternatives at that position; failing that, from the candidate's. When one side's list has
//   logprobs but lacks the other side's token, the margin is at least (chosen - worst listed):
//   margin_is_lower_bound is set. near_tie when margin < near_tie option, real_change otherwise,
//   unknown when no logprobs were recorded (or the margin is only a lower bound under the
//   threshold).
//   Default 0.05 nats: batch-dependent reductions in fp16/bf16 kernels move logits by ~1e-3..1e-2,
//   so only candidates closer than a few hundredths of a nat can swap places by noise, while a
//   changed model or setting moves the winner by tenths of a nat or more. 0.05 nats is a 5%
//   probability ratio: loose enough to absorb the noise, tight enough not to excuse real changes.
//
// Remainders after the divergence: common suffix and Myers edit distance (insertions plus
// deletions, no substitutions), both in basis units (tokens for token_ids, bytes for bytes); the
// distance search stops at Options::max_edit_distance and says so (edit_distance_capped).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "format/trace.hpp"

namespace retrace::diff {

inline constexpr double kDefaultNearTieMargin = 0.05;

enum class Match : std::uint8_t { exact, normalized, contains, regex, json_field };
enum class FailOn : std::uint8_t { any, real, none };

struct Options {
  std::size_t context = 5;  // tokens before and after the divergence, each side
  double near_tie = kDefaultNearTieMargin;
  bool expect = false;  // match outputs against the expected answers the traces carry
  Match match = Match::exact;
  std::string match_arg;  // the regex, or the JSON field (dotted path)
  std::size_t max_edit_distance = 4096;
  double embedding_tolerance = 0;  // the largest absolute difference between vectors still identical
  // Divergent candidate exchanges are kept in memory between the two passes up to this many
  // (estimated) bytes; beyond it the candidate is read again in batches.
  std::size_t memory_budget = 256u << 20;
  // One candidate is compared side by side with the baseline, in one read of each, while its
  // exchanges come in the baseline's order; false: always in passes (tests, benchmarks).
  bool lockstep = true;
  // Trace files are read for each exchange's outputs only (ExchangeOutputs), and a divergent
  // pair's exchanges whole when they are looked at closely; false: every exchange read whole
  // (tests: the result is the same either way).
  bool outputs_only = true;
  // Identical pairs kept in RunComparison::pairs too (verdict identical, no divergences): a table
  // of every pair (the Python module's diff()); by default they are only counted.
  bool keep_identical = false;
};

// Parses "exact", "normalized", "contains", "regex:RE", "json:FIELD"; nullopt when unknown.
std::optional<std::pair<Match, std::string>> parse_matcher(std::string_view spec);
std::string_view to_string(Match);

enum class Verdict : std::uint8_t { identical, divergent, error, missing, not_compared };
BOOST_DESCRIBE_ENUM(Verdict, identical, divergent, error, missing, not_compared)
enum class Basis : std::uint8_t { token_ids, bytes };
enum class Classification : std::uint8_t { near_tie, real_change, unknown };
BOOST_DESCRIBE_ENUM(Classification, near_tie, real_change, unknown)
enum class Alignment : std::uint8_t { source_to_source, source_to_id, id_to_source, key_occurrence };
std::string_view to_string(Verdict);
std::string_view to_string(Basis);
std::string_view to_string(Classification);
std::string_view to_string(Alignment);

struct TokenView {
  std::int32_t id = -1;
  std::string bytes;
  std::optional<float> logprob;
  std::vector<Alternative> top;
};

struct Divergence {
  std::uint32_t choice = 0;
  Part part = Part::content;
  std::uint32_t tool_call = 0;   // part tool_call: its position
  std::string tool_name;         // part tool_call: the baseline's name (the candidate's if absent)
  // part embedding: the largest absolute difference (nullopt when the lengths differ), and how
  // many values differ at all; token fields are unused.
  std::optional<double> largest_difference;
  std::size_t values_differing = 0;
  Basis basis = Basis::bytes;
  std::string basis_note;  // why bytes were compared although a side had ids, etc.
  std::size_t baseline_index = 0, candidate_index = 0;  // token (delta) index on each side
  std::size_t byte_offset = 0;  // of the first differing byte in the concatenated output
  std::optional<TokenView> baseline_token, candidate_token;  // nullopt: that side ended
  std::vector<TokenView> baseline_before, baseline_after, candidate_before, candidate_after;
  std::optional<double> margin;
  bool margin_is_lower_bound = false;
  Classification classification = Classification::unknown;
  std::size_t common_suffix = 0;  // basis units
  std::size_t edit_distance = 0;  // basis units, remainders after the divergence
  bool edit_distance_capped = false;
  std::size_t baseline_tokens = 0, candidate_tokens = 0;
  std::size_t baseline_bytes = 0, candidate_bytes = 0;
  std::string baseline_finish, candidate_finish;
};

// One choice's token stream against another; nullopt when identical. Pure: the core of diff,
// exposed for tests and for bisect. Tokens only: compare_parts() pairs the parts and compares
// names and embeddings.
std::optional<Divergence> first_divergence(const Choice& baseline, const Choice& candidate,
                                           const Options& options);
// Every part of two outputs paired and compared (see the top of this file): one Divergence per
// differing part, in the choices' order (index, then generation order).
std::vector<Divergence> compare_parts(const std::vector<Choice>& baseline, const std::vector<Choice>& candidate,
                                      const Options& options);
// A part's name in reports: "answer", "reasoning", "refusal", "tool call 0 (get_weather)",
// "embedding"; prefixed "choice N " when `with_choice`.
std::string part_name(const Divergence& divergence, bool with_choice);
// Which parts of a pair differ, the first first: "reasoning changed, answer the same", "answer
// changed", "reasoning changed first, then answer"; "" without divergences.
std::string parts_changed(const std::vector<Divergence>& divergences);

// Myers' O(ND) distance (insertions + deletions) between two sequences; stops at max_d and
// returns {max_d, true} when the distance is larger.
struct EditDistance {
  std::size_t distance = 0;
  bool capped = false;
};
EditDistance myers_distance(const std::vector<std::uint64_t>& a, const std::vector<std::uint64_t>& b,
                            std::size_t max_d);
EditDistance myers_distance(std::string_view a, std::string_view b, std::size_t max_d);

// A token's logprob less that of the likeliest other alternative listed at its position (the same
// token found among them as diff finds it: by id where both have one, else by bytes): how far the
// chosen token was from the next candidate; negative when a less likely token was sampled.
// nullopt without logprobs or without another alternative.
std::optional<double> margin_to_next(const Choice& choice, const Token& token);  // one of its tokens

// Whether a stream is compared on token ids: every token carries one (an empty stream is
// compatible with either basis).
bool has_token_ids(const Choice& choice);
bool has_token_ids(const ChoiceOutput& choice);  // the same rule, on a choice's outputs

// Whether `output` matches `expected` under the options' matcher.
bool matches_expected(std::string_view output, std::string_view expected, const Options& options);
// The normalized form used by Match::normalized and Match::contains: trimmed, ASCII case-folded,
// whitespace runs collapsed to one space, trailing punctuation stripped.
std::string normalize_answer(std::string_view text);

// The output text of an exchange's first choice (what --expect matches).
std::string output_text(const Exchange& exchange);
std::string_view output_text(const ExchangeOutputs& exchange);  // the same, from its outputs

// Only non-identical pairs are kept in RunComparison::pairs (all with Options::keep_identical);
// identical ones are counted.
struct PairResult {
  std::optional<std::uint64_t> baseline_id, candidate_id;  // nullopt: absent on that side
  std::optional<std::size_t> baseline_position, candidate_position;  // index in each trace
  RequestKey key;
  Verdict verdict = Verdict::identical;
  std::string error;  // for Verdict::error: which side, kind and message; not_compared: why
  std::vector<Divergence> divergences;  // one per differing choice
  std::optional<bool> baseline_matches_expected, candidate_matches_expected;
  std::int32_t candidate_in_flight = -1;  // the candidate's requests in flight at its send
  std::int64_t candidate_cached = -1;     // its prefix-cached prompt tokens, as the server said
  double candidate_preemptions = -1;      // preemptions while it ran, from the run's series
};

// Compared pairs (identical or divergent) by the candidate's requests in flight when it was sent
// (Exchange::in_flight_at_send, format 1.5): what the load was when an output changed. Indexed
// by that count, up to kMaxInFlightTallied (higher counts are tallied there); empty when the
// candidate's trace does not say (recorded, imported, written before 1.5).
struct InFlightTally {
  std::size_t compared = 0, differing = 0;
};
inline constexpr std::size_t kMaxInFlightTallied = 1u << 16;
// The same by the server's side (format 1.6): the candidate's prefix-cache hit (the server said
// cached tokens > 0) or miss (it said 0), and whether the server preempted requests while it ran
// (its series' preemptions > 0) or not. A candidate whose trace does not say is in neither.
struct ServerTallies {
  InFlightTally cache_hit, cache_miss, preempted, not_preempted;
};

struct RunComparison {
  std::string name;  // the candidate trace's path or run label
  Alignment alignment = Alignment::key_occurrence;
  std::size_t exchanges = 0;  // in the candidate trace
  std::size_t compared_in_lockstep = 0;  // of them, read side by side with the baseline
  // The check of an alignment by ids against the request keys: aligned pairs whose two exchanges
  // carry the same request key, and what was concluded ("" when every pair carried the same key,
  // or the run was aligned by key from the start).
  std::size_t pairs_with_same_key = 0;
  std::string alignment_note;
  std::size_t aligned = 0, identical = 0, divergent = 0, errors = 0;
  std::size_t missing_in_candidate = 0, missing_in_baseline = 0;
  // Not compared (see the top of this file), and why: each reason with its count.
  std::size_t not_compared = 0;
  std::map<std::string, std::size_t> not_compared_why;
  // Divergent pairs by class: real_change if any differing choice is one, else unknown if any
  // is, else near_tie.
  std::size_t near_ties = 0, real_changes = 0, unknown_changes = 0;
  std::optional<std::size_t> matches_expected, with_expected;  // with Options::expect
  // Exchanges of this run not matching their expected answer, each named by its baseline
  // exchange's id when paired (so one gold question has one number in every run), else by its own.
  std::vector<std::uint64_t> failing_expected;
  // One character per baseline exchange, in baseline order: '.' identical, 'D' divergent,
  // 'E' error, 'M' missing in the candidate, 'N' not compared. Candidate-only exchanges are counted, not shown.
  std::string matrix;
  std::vector<PairResult> pairs;
  std::vector<InFlightTally> by_in_flight;
  ServerTallies by_server;
};

// "N not compared (why: count; ...)" of a run, "" when everything was compared: how sweep and
// bisect name what they could not count as identical or divergent.
std::string not_compared_text(const RunComparison& run);

struct RequestGroups {
  std::size_t baseline_position = 0;
  std::uint64_t baseline_id = 0;
  // Runs sharing each distinct completion (0 = baseline, i = candidate i-1); runs where the
  // exchange errored or is missing are in no group.
  std::vector<std::vector<std::size_t>> groups;
};

struct Result {
  std::string baseline_name;
  std::size_t baseline_exchanges = 0;
  std::optional<std::size_t> baseline_matches_expected, baseline_with_expected;
  std::vector<std::uint64_t> baseline_failing_expected;  // ids not matching their expected answer
  std::vector<RunComparison> runs;
  // N-way: requests with more than one distinct completion across baseline and candidates, and
  // how many requests have each number of distinct completions.
  std::vector<RequestGroups> requests;
  std::map<std::size_t, std::size_t> unique_completions_histogram;
  // Baseline-side token index of every divergence's first differing choice, over all runs.
  std::vector<std::size_t> first_divergence_positions;
  bool compared_bytes_somewhere = false;  // some pair fell back from ids to bytes
  std::vector<std::string> warnings;      // torn tails and the like, one line each
};

// A restartable stream of exchanges: a trace file, or exchanges already in memory.
class ExchangeSource {
 public:
  virtual ~ExchangeSource() = default;
  virtual const std::string& name() const = 0;
  virtual void rewind() = 0;               // start again from the first exchange
  virtual bool next(Exchange& out) = 0;    // false at the end
  // The next exchange's outputs only (what the summaries read); false at the end. whole() gives
  // the whole of that exchange, until the next call of either next. By default both go through
  // next(); a trace file reads the outputs alone and the rest only when asked.
  virtual bool next_outputs(ExchangeOutputs& out);
  virtual void whole(Exchange& out);
  // What had to be dropped while reading (a torn tail); "" when nothing. Valid after next()
  // returned false.
  virtual std::string recovery_note() const { return {}; }

 private:
  Exchange read_;  // the exchange next_outputs() took its outputs from, by default
};

// Exchanges held in memory (not owned; must outlive the source).
class MemorySource : public ExchangeSource {
 public:
  MemorySource(std::string name, const std::vector<Exchange>& exchanges)
      : name_(std::move(name)), exchanges_(&exchanges) {}
  const std::string& name() const override { return name_; }
  void rewind() override { position_ = 0; }
  bool next(Exchange& out) override;

 private:
  std::string name_;
  const std::vector<Exchange>* exchanges_;
  std::size_t position_ = 0;
};

// A .rtrace file, streamed with bounded memory (reopened on rewind). A torn tail is reported on
// stderr once, and the readable exchanges are compared.
// Options::outputs_only says how next_outputs() reads it.
std::unique_ptr<ExchangeSource> open_trace_source(const std::filesystem::path& path, bool outputs_only = true);

// The engine. Streams the baseline once and each candidate once; pairs whose hashes differ are
// examined in a second pass over the baseline (and over a candidate only when the divergent
// exchanges exceed Options::memory_budget). One candidate in the baseline's order is compared in
// lockstep instead, as both are read, up to where its order breaks (Options::lockstep). Throws
// TraceError on unreadable traces.
Result compare(ExchangeSource& baseline, const std::vector<ExchangeSource*>& candidates,
               const Options& options);

// Conveniences over compare(): traces loaded in memory, or trace files by path.
Result compare(const LoadedTrace& baseline, const std::vector<const LoadedTrace*>& candidates,
               const std::vector<std::string>& candidate_names, const Options& options);
Result compare_files(const std::filesystem::path& baseline,
                     const std::vector<std::filesystem::path>& candidates, const Options& options);

// Exit policy: how many outputs count as failures under `fail_on` (any: divergent, error, missing
// and not compared; real: the same minus near-tie divergences; none: nothing).
std::size_t failing_outputs(const Result& result, FailOn fail_on);

}  // namespace retrace::diff
