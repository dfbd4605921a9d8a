// Study: the repeatability experiment as one command. A baseline run, then every cell of
// concurrency × cache state run `repeats` times; the cell with the baseline's own configuration is
// the control, whose difference rate is the noise floor. Built on the sweep's machinery: the
// directory holds the sweep's plan.json (settings, runs, statuses; rewritten after each run, so
// --resume redoes only what never finished) beside study.json (what only a study has), one trace
// per run (baseline.rtrace, c16-warm-r2.rtrace, ...), exchanges.csv (every exchange's sampling as
// sent and its cached tokens) and summary.json/.md/.csv, report.html.
//
// The requests. The trace's selection (replay's --filter, --limit, --requests N; --same-prompt N:
// its first request N times) is laid out once as the study's own input, one exchange per request
// sent, so every run sends the same list and diff pairs request i with request i.
//
// Cache state, by the server the preflight identified (cache_control):
//   cold  vLLM and retrace serve: a fresh cache_salt on every request of every run; SGLang:
//         POST /flush_cache before the run; llama.cpp: cache_prompt false; anything else: no
//         control, said in every summary.
//   warm  every request of the run sent once first (not measured; replay's warm-up), then the run.
// Whether a warm cell hit the cache is read from the responses (cached_tokens_of), never assumed.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "base/json_paths.hpp"
#include "replay/preflight.hpp"
#include "report/study_summary.hpp"
#include "report/study_targets.hpp"
#include "sweep/sweep.hpp"

namespace retrace::sweep {

enum class CacheControl : std::uint8_t { salt, flush, no_cache_prompt, none };
// How a cold cache is made on `server_kind` (replay::ServerIdentity::kind).
CacheControl cache_control(const std::string& server_kind);
// "a fresh cache_salt per request", "POST /flush_cache before the run", ... for summaries.
std::string cache_method(CacheControl control, const std::string& state);

struct StudySettings {
  std::vector<std::string> cache = {"cold", "warm"};  // states, in order; [0] is the baseline's
  std::optional<std::size_t> same_prompt;
  bool greedy = false;          // --greedy: temperature 0 set on every request
  bool allow_sampling = false;  // --allow-sampling: run requests that are not greedy
  std::vector<std::string> run_cache;  // per run of the plan, its cache state
  // Every --target, in order. One: the runs sit in the study's directory (plan.target is it).
  // Several: the directory's plan.json and study.json are the template, and target k's runs, plan
  // and summaries sit in target-k/ (its study.json names it alone); the study's own summaries
  // compare them (report/study_targets.hpp). Empty in a study.json older than this field: one target.
  std::vector<std::string> targets;
};

// Parses "cold,warm" (distinct; cold or warm); throws std::invalid_argument naming --cache.
std::vector<std::string> parse_cache_states(std::string_view text);

// The bounds plan_study() refuses past, naming the figure: runs in one study (each a trace
// file), and --same-prompt's requests a run.
inline constexpr std::uint64_t kMaxStudyRuns = 100'000;
inline constexpr std::size_t kMaxSamePrompt = 1'000'000;
inline constexpr std::uint64_t kMaxSamePromptBytes = std::uint64_t(4) << 30;  // those copies' bytes
// The runs: baseline (first concurrency, first cache state), then for each concurrency, each cache
// state, `repeats` runs c16-warm-r2. Fills plan.runs and settings.run_cache.
void plan_study(Plan& plan, StudySettings& settings);

void save_study(const StudySettings& settings, const std::filesystem::path& dir);
// Throws std::runtime_error naming study.json and the field.
StudySettings load_study(const std::filesystem::path& dir);

// The requests every run sends: `input`'s selection under the plan's replay flags (--requests,
// --same-prompt: cycled), one exchange each with id 0..N-1 and the label study_prompt naming the
// input exchange it copies.
LoadedTrace study_input(const LoadedTrace& input, const Plan& plan, const StudySettings& settings);
// The input of one cold run under `control`: each body with a cache_salt unique to the run and
// the request (salt), or cache_prompt false (no_cache_prompt); unchanged otherwise.
LoadedTrace cold_input(const LoadedTrace& requests, CacheControl control, const std::string& salt_prefix);

// One exchange's sampling as its body says (top level, or SGLang's sampling_params, TGI's
// parameters) and what its response says of the prompt cache and the model.
struct ExchangeAudit {
  std::optional<std::string> temperature, top_p, top_k, seed, n;  // as JSON text; nullopt: absent
  std::optional<std::int64_t> cached_tokens;  // nullopt: the response did not say
  std::string model;                          // the response's "model"
};
// The audit's reading of bodies and responses, one pass of a SAX parser over the key paths it
// reads (base/json_paths.hpp: no JSON tree, no allocation a text once warm); one per thread,
// reused. The functions below make one for a call. tests/study_audit_test.cpp checks it against a
// whole parse of each text.
class AuditReader {
 public:
  // The sampling of a request body (the requests before any traffic): ExchangeAudit's sampling
  // fields, each the JSON text of the first non-null value at the top level, in SGLang's
  // sampling_params or TGI's parameters.
  ExchangeAudit body(std::string_view body);
  // The same fields as read, before they are written as JSON text (temperature, top_p, top_k,
  // seed, n): each the first value not null, absent where none is; valid until the next call.
  // A value of kind `other` (a string, a boolean, an array or an object) is one body() prints
  // from a whole parse.
  const std::array<JsonSlot, 5>& sampling(std::string_view body);
  // What its response says of the prompt cache: the first of usage.prompt_tokens_details.
  // cached_tokens, meta_info.cached_tokens, timings.cache_n, usage.cached_tokens that is a number,
  // in the body or in the last four events holding a JSON object; nullopt when none says. A
  // count written as a whole double (7.0) is that count; a negative, fractional or too large one
  // (2^63 and over) throws std::runtime_error naming the exchange, the field and the value.
  std::optional<std::int64_t> cached_tokens(const Exchange& exchange);

 private:
  // `event`: the event's index, nullopt for the body (named in the error).
  std::optional<std::int64_t> cached_in(std::string_view text, bool& parsed, const Exchange& exchange,
                                        std::optional<std::size_t> event);
  std::array<JsonSlot, 5> fields_;
  JsonPaths sampling_{{"temperature"}, {"top_p"}, {"top_k"}, {"seed"}, {"n"},
                      {"sampling_params", "temperature"}, {"sampling_params", "top_p"}, {"sampling_params", "top_k"},
                      {"sampling_params", "seed"}, {"sampling_params", "n"},
                      {"parameters", "temperature"}, {"parameters", "top_p"}, {"parameters", "top_k"},
                      {"parameters", "seed"}, {"parameters", "n"}};
  JsonPaths cached_{{"usage", "prompt_tokens_details", "cached_tokens"},
                    {"meta_info", "cached_tokens"},
                    {"timings", "cache_n"},
                    {"usage", "cached_tokens"}};
};
ExchangeAudit audit_exchange(const Exchange& exchange);
// The same for a request body alone (AuditReader::body).
ExchangeAudit audit_body(std::string_view body);
// Only what its response says of the prompt cache (AuditReader::cached_tokens).
std::optional<std::int64_t> cached_tokens_of(const Exchange& exchange);
void count_sampling(const ExchangeAudit& audit, report::SamplingAudit& into);

// Refuses (std::invalid_argument, with what to do) a study whose requests, after --set, --unset
// and --greedy, are not all at temperature 0, unless settings.allow_sampling.
void check_greedy(const LoadedTrace& requests, const Plan& plan, const StudySettings& settings);

// --target as given, checked: none is missing, none given twice (compared without a trailing
// slash, case-blind); throws std::invalid_argument naming the repeated one.
std::vector<std::string> parse_targets(const std::vector<std::string>& given);
// The sub-directory of target `index` (0-based) in a several-target study: "target-1", ...
std::string target_dir(std::size_t index);
// Writes each target's plan.json and study.json into its sub-directory (over what is there when
// `fresh`, else only where missing, so --resume keeps each target's progress).
void prepare_targets(const Plan& plan, const StudySettings& settings, const std::filesystem::path& dir, bool fresh);
// A several-target study: every target's pending runs (run_study in its sub-directory, one target
// after the other), then the study's own summaries beside them. nullopt when stopped first.
std::optional<report::StudyTargets> run_study_targets(const StudySettings& settings, const std::filesystem::path& dir,
                                                      const SweepIo& io);
// The same summary from finished runs (no traffic).
report::StudyTargets summarize_study_targets(const Plan& plan, const StudySettings& settings,
                                             const std::filesystem::path& dir);
// Runs not yet done, and all runs, over every target.
std::pair<std::size_t, std::size_t> study_runs_left(const Plan& plan, const StudySettings& settings,
                                                    const std::filesystem::path& dir);

// Runs every pending run into `dir` (plan saved after each), then summarizes and writes the
// summaries. Returns nullopt when stopped first. Throws on set-up errors, as run_sweep.
std::optional<report::StudySummary> run_study(Plan& plan, const StudySettings& settings,
                                              const std::filesystem::path& dir, const SweepIo& io);
// The summary from finished runs (no traffic); writes exchanges.csv as it reads them.
report::StudySummary summarize_study(const Plan& plan, const StudySettings& settings,
                                     const std::filesystem::path& dir);

}  // namespace retrace::sweep
