// Replay: re-issue a trace's requests against a target under a schedule (closed-loop concurrency,
// open-loop rate, or the recorded timing), and write the results as a new trace.
//
// Latency is measured from the *intended* send time (what the schedule wanted; corrected for
// coordinated omission as wrk2 does) and from the actual send time; both are kept per exchange.
//
// Entry points: run_replay() (one run into one trace; its input loaded whole, or, for a run that
// sends it in its own order, read as it is sent: replay/feed.hpp), compute_stats() (the report's
// figures for any trace). Everything below "Building blocks" is public so that tests, sweep and bisect can use
// the same parsing and selection rules as `retrace replay`.
//
// Decisions a caller should know:
// - Each result exchange gets a new id (0, 1, ... in completion order) and source_id = the id of
//   the input exchange; diff aligns runs by source_id, so a replay of a replay still aligns with
//   the original through source ids (the second replay's source ids are the first replay's ids,
//   whose source ids are the original's; diff follows whichever it is given).
// - Result exchanges keep the input's labels (a dataset's `id`, ...) and its `expected`; the
//   run's labels (run, concurrency or rate, repeat, --label) replace same-named ones.
// - --repeat K writes K traces, RUN.r1.rtrace ... RUN.rK.rtrace (repeat_path()), each a complete
//   run labelled repeat=k, so N-way diff and stats work on them unchanged. K = 1 writes RUN as is.
// - --warmup N sends the first N selected requests (cycling) before the measured run, closed loop
//   at the run's concurrency (1 for rate/recorded schedules); they are neither written nor
//   counted, and the run's clock starts after them. Every selected exchange is in the output.
// - Requests record rejected itself (ErrorKind rejected: 400/413/431 answered by record, never sent
//   upstream) are never replayed; the run says how many it left out (stderr, settings).
// - Order of selection: --filter, --window-from/--window-to, --sample-sessions, then --shard, then
//   --limit, then --requests (cycling what is left). Recorded offsets: the trace's clock, minus
//   --window-from (else minus the earliest chosen offset), divided by --speed, then gaps capped by
//   --max-idle-gap.
// - Sessions (--sessions): the exchanges of one session_id run in recorded order, each after the
//   previous one ended. Closed loop: N sessions in flight. Rate: *sessions* arrive at the rate,
//   their turns follow back to back. Recorded: a turn goes at its recorded time or when the
//   previous turn ended, whichever is later. Exchanges without a session id are one-turn sessions.
//   --shard splits by session so that a session is never cut across machines.
// - Sharded runs (--shard I/N, --start-at): see replay/shard.hpp; `retrace merge` joins them
//   (replay/merge.hpp).
// - Body rewriting happens in this order: the model (--model, or the target's one model standing
//   in for one it does not serve; OpenAI-style bodies only), --token-ids fields, streaming (on by
//   default for completions and chat, with stream_options.include_usage; --no-stream), then
//   --unset, then --set, then live
//   session substitution; all but the last on one parse of the body (replay/request_body.hpp). A
//   body that is not rewritten is sent byte for byte; one that only gains top-level fields is
//   sent as recorded with them appended; any other is re-serialised once (key order kept). The
//   request key is that of the request as sent.
// - The output header's server_info is JSON: {"models": <GET /v1/models answer or null>,
//   "models_status": N, "server": {"kind", "version", "evidence"}, "preflight": {...} (see
//   replay/preflight.hpp), "metrics_before": "<Prometheus text>"|null, "metrics_after": ...}. The
//   after-scrape is only known at the end, so the run is written to OUT.partial and re-streamed
//   into OUT with the final header when it ends (Ctrl-C included); after a crash, OUT.partial is a
//   readable trace of everything flushed.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/clock.hpp"
#include "base/duration.hpp"
#include "format/output_tokens.hpp"
#include "net/arrived_body.hpp"
#include "net/scrape_settings.hpp"
#include "format/redaction.hpp"  // secrets: what the trace and settings never hold
#include "format/trace.hpp"
#include "llm/llm.hpp"
#include "metrics/run_settings.hpp"
#include "metrics/stats.hpp"  // Stats, StatsBuilder, Slo: kept here for the callers that include replay.hpp

namespace retrace::replay {

struct Preflight;  // replay/preflight.hpp

enum class ScheduleKind : std::uint8_t { concurrency, rate, recorded };
BOOST_DESCRIBE_ENUM(ScheduleKind, concurrency, rate, recorded)
enum class Arrival : std::uint8_t { poisson, constant, gamma };
BOOST_DESCRIBE_ENUM(Arrival, poisson, constant, gamma)

std::string_view to_string(ScheduleKind);
std::string_view to_string(Arrival);
std::optional<Arrival> arrival_from_string(std::string_view);

// The most requests a closed loop keeps in flight: each slot holds a coroutine, a connection and
// its buffers (~10 KB: --rate inf --requests 4000000000 peaked at 1.0 GB with 100,000 slots;
// -c 1,000,000 took 1.5 GB for 10 requests before any connection), and more connections than
// this pass most descriptor limits. -c above it is refused (check_concurrency, replay/flags.hpp);
// --rate inf without -c sends at most this many at once.
inline constexpr int kMaxInFlight = 100'000;

// The most requests a run lays out before it starts: a planned run (sessions, a time window,
// recorded timing) and every run of sweep, bisect and study hold each request's place, chain and
// offsets (~130 bytes a request: --sessions --requests 1,000,000 peaked at 136 MB), so --requests
// and --warmup above it are refused there. A streamed replay (none of those) reads its requests
// as it sends them and holds ~64 bytes a finished one for its figures, whatever --requests says.
inline constexpr std::size_t kMaxLaidOutRequests = 10'000'000;

struct Schedule {
  ScheduleKind kind = ScheduleKind::concurrency;
  int concurrency = 1;     // closed loop: requests in flight (rate and recorded schedules have no cap)
  double rate = 0;         // open loop: requests per second (sessions per second with --sessions)
  Arrival arrival = Arrival::poisson;
  double burstiness = 1;   // gamma shape; 1 = Poisson, < 1 burstier, > 1 more regular
  double speed = 1;        // recorded timing: 2 = twice as fast
};

// "ttft:200ms,tpot:50ms,e2e:2s" (every limit with a unit), and "ttft:16tpot" (TTFT within 16 of
// the request's own TPOT: Slo::ttft_tpots); throws std::invalid_argument naming the bad part.
Slo parse_slo(std::string_view text);

struct Options {
  std::string target;  // base URL, e.g. http://127.0.0.1:8000
  std::string input;   // the input trace as named: the run's settings keep it ("trace" in reports)
  Schedule schedule;
  bool sessions = false;       // a session's exchanges run in order, sessions concurrently
  bool live_sessions = false;  // chat turns carry this run's earlier answers (implies sessions)
  std::size_t warmup = 0;      // requests sent before the run, neither counted nor written
  std::optional<std::size_t> limit;
  // Set by run_replay for its settings: the input's requests record rejected, left out.
  std::size_t skipped_rejected = 0;
  // The trace's own clock (trace_clock_ns): exchanges whose offset is in [window_from, window_to)
  // are kept (a session by its first turn's offset), and recorded timing starts at window_from.
  std::optional<std::chrono::nanoseconds> window_from, window_to;
  // Recorded timing: a gap between successive intended sends (and the wait before the first)
  // longer than this is shortened to it; applied after --speed, to the schedule as replayed.
  std::optional<std::chrono::nanoseconds> max_idle_gap;
  // Keep this fraction (0, 1] of sessions, chosen by a hash of the session id and `seed`, so
  // shards and repeats keep the same ones. An exchange without a session id is its own session.
  std::optional<double> sample_sessions;
  // Send this many requests, cycling through the selection (fewer: its first N). Not with recorded
  // timing, whose clock does not repeat.
  std::optional<std::size_t> requests;
  // Stop sending new requests this long after the run's start; those in flight finish.
  std::optional<std::chrono::nanoseconds> duration;
  std::vector<std::string> filters;  // "path:GLOB", "label:KEY=GLOB", "session:GLOB"; all must match
  std::vector<std::pair<std::string, std::string>> set;  // JSON body path = JSON (or string) value
  std::vector<std::string> unset;
  std::vector<HttpHeader> headers;   // added to every request (redacted in the trace when secret)
  std::optional<std::string> api_key;  // sent as "Authorization: Bearer"; never written
  std::string api_key_env;             // the variable's name, for the settings record only
  // --set-secret FIELD=ENV: body members named FIELD that hold the redaction marker are sent with
  // the variable's value (replay/secret_fill.hpp); the run's trace keeps the marker.
  std::vector<std::pair<std::string, std::string>> secret_fills;
  // nullopt: auto, chosen from the identified server (replay/preflight.hpp).
  std::optional<llm::TokenIdMode> token_ids = llm::TokenIdMode::off;
  std::optional<std::string> model;  // --model: the "model" of every inference request
  // Completions and chat stream, with stream_options.include_usage (llm::set_streaming); false:
  // --no-stream.
  bool stream = true;
  // --timeout: the longest a request may go without progress (connecting, the first byte of
  // the response, and every gap between bytes), so a long generation is not cut while the server
  // keeps sending; --request-deadline: from its send to its last byte, none by default.
  std::chrono::milliseconds timeout{120'000};
  std::optional<std::chrono::milliseconds> request_deadline;
  // --max-response-bytes: one response as received past this is cut (ErrorKind::truncated) and
  // the run goes on (net/arrived_body.hpp).
  std::size_t max_response_bytes = net::kDefaultMaxResponseBytes;
  std::vector<Label> labels;  // written to the header and every exchange
  std::string run_name;       // label "run" (default: the output file's stem)
  int repeat_index = 0;       // label "repeat" when > 0
  Slo slo;
  std::size_t shard_index = 0, shard_count = 1;
  // --start-at: the wall-clock instant (Unix ns) the schedule's clock starts at (replay/shard.hpp).
  std::optional<std::int64_t> start_at_unix_ns;
  std::uint64_t seed = 1;     // arrival process
  unsigned threads = 0;       // worker threads; 0 = one per core
  std::string ca_file;
  bool insecure = false;
  WriterOptions writer;
  // The target's /metrics over the measured run, kept in its trace (net/scrape.hpp).
  using Scrape = net::ScrapeSettings;
  Scrape scrape;
  // What the run measures and records its times on (send offsets, TTFT, ends, the run's start);
  // tests pass a ManualClock. Waiting (timers) runs on real time either way.
  const Clock* clock = &Clock::system();
  // What a preflight found (sweep and bisect run it once for all their runs); null: run_replay
  // runs its own.
  std::shared_ptr<const Preflight> preflight;
};

struct Progress {
  std::size_t done = 0, total = 0, errors = 0;
};

struct RunResult {
  std::filesystem::path out;
  Stats stats;
  bool interrupted = false;
  // Requests sent with the redaction marker still in their body or target (a recorded secret
  // that no --set-secret filled): said once after the run.
  std::size_t sent_redacted = 0;
};

// Replays `input` (a loaded trace) to `out`. Network errors are counted and recorded, never
// abort; set-up errors (bad target URL, unwritable output, bad --set path, bad filter) throw
// std::invalid_argument / std::runtime_error / TraceError, and a failed preflight (nothing
// answers at the target, several models and no --model) throws PreflightError, all before any
// traffic. `stop` (may be null) is polled: when it
// turns true the run stops sending, cuts in-flight requests (recorded with ErrorKind::cut), flushes
// and returns with interrupted = true. `on_progress` is called from a watcher thread (~10/s).
RunResult run_replay(const LoadedTrace& input, const Options& options,
                     const std::filesystem::path& out, const std::atomic<bool>* stop = nullptr,
                     const std::function<void(const Progress&)>& on_progress = {});
// The same for an input read as it is sent (replay/feed.hpp: scan_input, when can_stream()).
// Throws, after writing `out` for what was sent, TraceError when the input changed during the run.
struct StreamedInput;
RunResult run_replay(const StreamedInput& input, const Options& options,
                     const std::filesystem::path& out, const std::atomic<bool>* stop = nullptr,
                     const std::function<void(const Progress&)>& on_progress = {});

// RUN.rtrace, k of K -> RUN.r<k>.rtrace (K > 1); RUN.rtrace itself when K == 1.
std::filesystem::path repeat_path(const std::filesystem::path& out, int k, int repeats);

// ---------------------------------------------------------------------------------------------
// Building blocks (public for tests, sweep and bisect)

// Durations are base/duration.hpp's; replay:: callers keep their names.
using retrace::format_duration;
using retrace::parse_duration;

// "I/N" with 0 <= I < N. Throws invalid_argument.
std::pair<std::size_t, std::size_t> parse_shard(std::string_view text);

// The one sentence a run says when it sent `count` requests with the redaction marker in them.
std::string sent_redacted_note(std::size_t count);

// "k=v" (for --label and --set). Throws invalid_argument naming `what`.
std::pair<std::string, std::string> split_assignment(std::string_view text, std::string_view what);
// "Name: value". Throws invalid_argument.
HttpHeader parse_header(std::string_view text);

// Throws invalid_argument when a filter is not one of the forms Options::filters names.
void validate_filter(std::string_view filter);
bool matches_filter(const Exchange& exchange, std::string_view filter);

// How many of `exchanges` record rejected itself (ErrorKind rejected): select_exchanges skips them.
std::size_t rejected_by_record(const std::vector<Exchange>& exchanges);

// What replay can stop reading its input at: a predicate for load_requests that turns true once
// --limit exchanges it would send (not rejected by record) have been read, when nothing that comes
// before --limit in the order of selection needs the rest of the trace (no --filter, time window,
// --sample-sessions, --shard or --start-at: a shard's input identity and clock are the whole
// trace's). Empty (read it all) otherwise. --limit 100 on a million-exchange trace reads 100.
std::function<bool(const Exchange&)> enough_input(const Options& options);

// The trace to replay, as replay, sweep and bisect read it: its requests only (load_requests), as
// far as enough_input(options) needs. A damaged or torn input is named on `warnings` ("PREFIX:
// warning: PATH: what was lost; replaying the N readable exchanges"); one that holds no readable
// exchange throws invalid_argument.
LoadedTrace load_input(const std::string& path, const Options& options, std::ostream& warnings,
                       std::string_view prefix);
// load_input's checks of what was read: the warning, and the error for nothing readable.
void check_readable(const std::string& path, const Recovery& recovery, std::size_t exchanges,
                    std::ostream& warnings, std::string_view prefix);

// Input positions to replay, in input order, without the requests record rejected, after filters, window, session sample, shard (by
// position, or by session when `by_session`) and limit; then cycled to --requests. Throws
// invalid_argument when the filters match none of `exchanges` (Selection::check_filters_matched).
std::vector<std::size_t> select_exchanges(const std::vector<Exchange>& exchanges,
                                          const Options& options, bool by_session);

// What selection, the time window, sessions and the recorded clock read of an input exchange: a
// run planned from one pass over its input (replay/planner.hpp) keeps this, not the exchange.
struct Candidate {
  bool eligible = false;     // not rejected by record, and every --filter matches
  std::uint64_t id = 0;
  std::string_view session;  // its session id ("" for none), in storage that outlives it
  std::int64_t actual_send_ns = 0, start_unix_ns = 0;
};
// `exchange` as a candidate under `options`' filters; its session views the exchange's.
Candidate candidate_of(const Exchange& exchange, const Options& options);
std::vector<Candidate> candidates_of(const std::vector<Exchange>& exchanges, const Options& options);
// The origin of the trace's clock (trace_clock_ns), learnt from every exchange of the trace, so
// that a part of it is placed on the whole trace's clock.
class TraceClock {
 public:
  void add(const Candidate& candidate);
  // The candidate's offset on the clock of every candidate add()ed; `actual_send_ns` and
  // `start_unix_ns` are a session's earliest when it is asked for a session's start.
  std::int64_t offset(std::int64_t actual_send_ns, std::int64_t start_unix_ns) const;

 private:
  bool have_offsets_ = false;
  std::int64_t earliest_offset_ = std::numeric_limits<std::int64_t>::max();
  std::int64_t earliest_start_ = std::numeric_limits<std::int64_t>::max();
};

// What a run planned from part of its trace (a time window's exchanges and sessions: the rest
// read past, not planned) knows of the whole: its clock, and how many exchanges it left out and
// how many of those passed the filters (for check_filters_matched).
struct LeftOut {
  TraceClock clock;
  std::size_t exchanges = 0, matched = 0;
};

// select_exchanges over candidates (the same order of selection). With `left_out`, `input` is the
// part of a trace inside its time window, placed on the whole trace's clock.
std::vector<std::size_t> select_candidates(const std::vector<Candidate>& input, const Options& options,
                                           bool by_session, const LeftOut* left_out = nullptr);

// The order of selection above, one exchange at a time in input order (the window is the
// caller's: it needs the whole trace's clock): what select_exchanges and a streamed input
// (replay/feed.hpp) both apply. Throws invalid_argument for a bad filter or trace control.
class Selection {
 public:
  Selection(const Options& options, bool by_session);
  // Whether the next exchange in input order is sent; false once --limit exchanges were taken.
  bool take(const Exchange& exchange, bool in_window = true);
  bool take(const Candidate& candidate, bool in_window = true);
  bool full() const;
  std::size_t taken() const { return taken_; }
  // Exchanges read past without being offered (outside a time window), `matched` of them eligible:
  // counted as offered for check_filters_matched.
  void left_out(std::size_t exchanges, std::size_t matched) {
    offered_ += exchanges;
    matched_ += matched;
  }
  // Once every exchange was offered to take(): throws invalid_argument "--filter F matched none
  // of the N exchanges" when there are filters and no exchange offered passed them (a valid
  // filter that selects nothing is a mistake to name, not an empty run).
  void check_filters_matched() const;

 private:
  const Options& options_;
  bool by_session_;
  std::size_t position_ = 0, taken_ = 0;
  std::size_t offered_ = 0, matched_ = 0;  // exchanges offered to take(), and those eligible
  std::unordered_map<std::string, std::size_t> session_ordinal_;
};

// The trace's own clock: each exchange's send offset (ns) from the trace's earliest one. The
// recorded offsets (actual_send_ns, which an import sets from the dataset's timestamps) when any
// exchange has one, else the wall-clock starts.
std::vector<std::int64_t> trace_clock_ns(const std::vector<Exchange>& exchanges);
std::vector<std::int64_t> trace_clock_ns(const std::vector<Candidate>& input,
                                         const TraceClock* whole = nullptr);

// Whether --sample-sessions `fraction` keeps the session `key` under `seed`: a splitmix64 of the
// key's FNV-1a hash and the seed, below fraction × 2^64. The same on every machine.
bool session_sampled(std::string_view key, double fraction, std::uint64_t seed);

// --max-idle-gap: `offsets` (ns, any order) with every gap between successive distinct values,
// and the wait from 0 to the first, shortened to at most `gap`; order and ties are kept.
void cap_idle_gaps(std::vector<std::int64_t>& offsets, std::int64_t gap);

// Throws std::invalid_argument when the trace-control settings do not fit together or with the
// schedule (a window that ends before it starts, --max-idle-gap without recorded timing, ...).
void validate_trace_controls(const Options& options);

// --set/--unset on a JSON body. Paths are dot-separated object keys; a segment that is a number
// indexes an array ("messages.0.content"). --set creates missing objects on the way; --unset of a
// missing path does nothing. A VALUE that parses as JSON is used as JSON (0, true, {"a":1},
// "quoted"), anything else as a string. Throws invalid_argument when the body is not a JSON object
// or a path runs through a non-object. Written back by base/json_edit.hpp's rule; the overload on
// a parsed body is in replay/request_body.hpp.
std::string apply_body_overrides(std::string_view body,
                                 const std::vector<std::pair<std::string, std::string>>& set,
                                 const std::vector<std::string>& unset);

// Live sessions: this run's answer to one turn, as the turns after it send it back: the first
// choice's content (its reasoning dropped, as clients drop it) and its tool calls in order, each
// with the id the server gave it ("" when it gave none).
struct SessionCall {
  std::string id, name, arguments;
  bool operator==(const SessionCall&) const = default;
};
struct SessionAnswer {
  std::string content;
  std::vector<SessionCall> calls;
  bool operator==(const SessionAnswer&) const = default;
};
// The answer in `choices` (an exchange's, sorted) with the ids `ids` (llm::ResponseDecoder's), or
// nullopt when there is no content part to take it from.
std::optional<SessionAnswer> session_answer(const std::vector<Choice>& choices,
                                            const std::vector<llm::ToolCallId>& ids);

// What became of the newest answer a body carries back (the turn just before; older answers were
// counted when the turn after each was sent): no tool turn, a tool turn with this run's calls,
// or a tool turn kept as recorded.
enum class ToolTurn : std::uint8_t { none, substituted, kept };
struct SessionBody {
  std::string body;
  ToolTurn newest = ToolTurn::none;
};
// An exchange's note when it answered with n > 1 choices in a live session.
inline constexpr std::string_view kLiveChoiceNote =
    "live session: the answer has n > 1 choices; choice 0 is what the session's next turn carries";
// The rule below in one line, as the run's header states it (settings "live_tool_turns").
inline constexpr std::string_view kLiveToolTurnRule =
    "a tool turn carries this run's calls (ids mapped in the tool messages after it) when they are "
    "the recorded calls (same names, arguments equal as JSON); otherwise it is kept as recorded, "
    "since the trace holds tool results only for the recorded calls";

// Live sessions: replaces the last answers.size() assistant messages of a body's "messages"
// (oldest first) with this run's answers to the previous turns:
//   - a turn without tool calls, recorded and now: its "content" becomes this run's content;
//   - a tool turn (recorded "tool_calls") that this run called again (as many calls, the same
//     names, arguments equal as JSON): "content" becomes this run's (null when empty) and
//     "tool_calls" this run's calls with their ids, and each "tool" message after it (up to the
//     next assistant message) has its "tool_call_id" mapped from the recorded id to this run's,
//     so the pairs hold; the recorded results answer these calls, being the same calls;
//   - a tool turn this run answered otherwise, a text turn this run answered with calls, and an
//     Anthropic tool_use turn (content blocks): kept as recorded, whole. retrace cannot run the
//     tools, and the trace holds results only for the recorded calls.
// An answer that is nullopt (that turn failed) leaves the recorded message. Bodies without
// messages pass through. Text goes in as a server would have sent it: a character cut short at
// its end held back, other bytes that are not UTF-8 as U+FFFD.
SessionBody substitute_session_answers(std::string_view body,
                                       const std::vector<std::optional<SessionAnswer>>& answers);

// Offsets (ns from the run's start) of `count` open-loop arrivals; the first is at 0. The same
// seed gives the same times on every machine (own samplers, not std:: distributions).
std::vector<std::int64_t> arrival_offsets_ns(std::size_t count, const Schedule& schedule,
                                             std::uint64_t seed);
// The same offsets one at a time (a streamed input draws them as it sends). Both throw
// invalid_argument for a rate of 0 or below, and for an arrival more than 100 years out.
class Random;
class Arrivals {
 public:
  Arrivals(const Schedule& schedule, std::uint64_t seed);
  ~Arrivals();
  std::int64_t next();

 private:
  Schedule schedule_;
  std::unique_ptr<Random> random_;
  double at_s_ = 0;
  std::size_t drawn_ = 0;
};

using metrics::RunSettings;
// The settings a run's header records (metrics/run_settings.hpp): the schedule and every option,
// secrets left out. The shard facts and the client's CPU are added as they become known.
RunSettings run_settings(const Options& options, std::string_view input_path = {});

}  // namespace retrace::replay
