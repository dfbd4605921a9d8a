// Sweep and bisect: the whole concurrency × repeat experiment, and the search for the first point
// along an ordered axis (concurrency, recorded runs, deployed values) where outputs part from the
// baseline. Both only orchestrate: replay/ makes the runs, diff/ compares them, this folder plans,
// resumes, aggregates and renders.
//
// A sweep directory holds:
//   plan.json        settings and every run with its status; rewritten atomically (write to
//                    a new plan.json.tmp.XXXXXX, fsync, rename) after each finished run, so `--resume` redoes
//                    only runs that never finished (a half-written trace is simply rewritten)
//   c16-r2.rtrace    one trace per run (concurrency 16, repeat 2; rate2-r1, speed0.5-r1 on the
//                    other axes); the baseline is the first level's first repeat
//   summary.json, summary.md, report.html
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "diff/diff.hpp"
#include "format/trace.hpp"
#include "replay/flags.hpp"
#include "replay/replay.hpp"
#include "report/sweep_summary.hpp"
#include "base/child_process.hpp"  // Child, run_shell: what demo and bisect --run start

namespace retrace::sweep {

// ---------------------------------------------------------------------------------------------
// Replay settings as the user typed them: the flags `retrace replay` shares (replay/flags.hpp).
// Kept in this form (not as replay::Options) so a plan can store and restore them; secrets are
// never stored (see plan_to_json).
using ReplayArgs = replay::RequestFlags;

// replay::Options for one run under `schedule` (closed loop at `concurrency`). Throws
// std::invalid_argument naming the bad flag value.
replay::Options to_replay_options(const ReplayArgs& args, const std::string& target,
                                  const replay::Schedule& schedule,
                                  const std::vector<Label>& run_labels);
replay::Options to_replay_options(const ReplayArgs& args, const std::string& target,
                                  int concurrency, const std::vector<Label>& run_labels);

// ---------------------------------------------------------------------------------------------
// Plan

enum class Order : std::uint8_t { grouped, interleaved };
BOOST_DESCRIBE_ENUM(Order, grouped, interleaved)
std::optional<Order> order_from_string(std::string_view);
std::string_view to_string(Order);

// What a sweep varies: closed-loop concurrency (c16-r1.rtrace), open-loop rate in requests per
// second (rate2-r1.rtrace, arrivals from Plan::arrival), or the speed of the recorded timing
// (speed0.5-r1.rtrace). Files say "rate"/"speed" in full because "r" already means the repeat.
enum class Axis : std::uint8_t { concurrency, rate, speed };
BOOST_DESCRIBE_ENUM(Axis, concurrency, rate, speed)
std::optional<Axis> axis_from_string(std::string_view);
std::string_view to_string(Axis);
using report::level_text;  // "16", "0.5": a level in names and tables

struct PlannedRun {
  std::string name;  // "c16-r2", "rate2-r1", "speed0.5-r3"
  double level = 1;  // on the plan's axis
  int repeat = 1;    // 1-based
  std::string file;  // relative to the sweep directory
  bool baseline = false;
  bool done = false;
};

struct Plan {
  std::string trace;  // input trace (absolute path)
  std::string target;
  Axis axis = Axis::concurrency;
  std::vector<double> levels;
  std::string arrival = "poisson";  // rate axis: poisson, constant or gamma
  std::optional<double> burstiness;  // rate axis, gamma arrivals: the shape (none: 1)
  int repeats = 1;
  Order order = Order::grouped;
  ReplayArgs replay;
  std::string answers_from;  // optional trace whose expected answers apply, matched by request key
  std::string match = "exact";  // diff's matcher spec: exact, normalized, contains, regex:RE, json:F
  double near_tie = diff::kDefaultNearTieMargin;
  std::vector<PlannedRun> runs;  // in execution order; runs[0] is the baseline
};

// Parses "1,16,32" (positive, distinct; integers for concurrency, any number above 0 for rate and
// speed); throws std::invalid_argument naming the flag and the bad item.
std::vector<double> parse_levels(std::string_view text, Axis axis = Axis::concurrency);

// Lays out the runs: the baseline (first level, first repeat) first, then grouped (every repeat of
// a level, level by level) or interleaved (every level once per repeat, which exposes drift).
std::vector<PlannedRun> plan_runs(const std::vector<double>& levels, int repeats, Order order,
                                  Axis axis = Axis::concurrency);

// The schedule of a run at `level` on the plan's axis (rate: open loop with the plan's arrivals;
// speed: the recorded timing). Throws std::invalid_argument for an unknown arrival.
replay::Schedule schedule_at(const Plan& plan, double level);

std::string plan_to_json(const Plan& plan);
// Throws std::runtime_error naming `where` and the field when the JSON is not a plan.
Plan plan_from_json(std::string_view json, const std::string& where);

// Writes dir/plan.json atomically (tmp file, fsync, rename). Throws on I/O failure.
void save_plan(const Plan& plan, const std::filesystem::path& dir);
Plan load_plan(const std::filesystem::path& dir);

// Indices of runs still to do, in plan order.
std::vector<std::size_t> pending_runs(const Plan& plan);

// ---------------------------------------------------------------------------------------------
// Summary

using report::DivergenceEntry;
using report::FailedQuestion;
using report::LevelSummary;
using report::RunFigures;
using report::Spread;
using report::Summary;
using report::describe_divergence;
using report::divergence_list;
using report::levels_table;
using report::summary_to_csv;
using report::spread_of;
using report::summary_to_json;
using report::summary_to_markdown;

// Aggregates one level from its diff (candidates = this level's runs, in repeat order, against the
// sweep's baseline) and its runs' figures. `pooled` carries latency percentiles over all of the
// level's exchanges. Pure: no I/O.
LevelSummary summarize_level(double level, const diff::Result& level_diff,
                             const std::vector<RunFigures>& level_runs,
                             const replay::Stats& pooled);

// Divergences of one level's diff, for the list below the table.
std::vector<DivergenceEntry> collect_divergences(double level, const diff::Result& level_diff);

// ---------------------------------------------------------------------------------------------
// Running a sweep

struct SweepIo {
  std::ostream* log = nullptr;            // progress lines (stderr); null = quiet
  const std::atomic<bool>* stop = nullptr;  // polled; a stopped run stays pending
};

// Runs every pending run of `plan` into `dir` (saving the plan after each), then builds the
// summary from the run files and writes summary.json and summary.md. Returns nullopt when stopped
// before all runs finished. Throws on set-up errors (unreadable trace, bad target).
std::optional<Summary> run_sweep(Plan& plan, const std::filesystem::path& dir, const SweepIo& io);

// Builds the summary from finished run files (no traffic), each run streamed (the input and
// --answers-from for their expected answers, each run once for its figures and once in diff's
// streaming compare per level): memory follows neither the number of requests nor their tokens,
// but for diff's own (its per-exchange summaries and the divergent pairs it keeps) and the
// divergences listed in summary.json and summary.md.
Summary summarize_sweep(const Plan& plan, const std::filesystem::path& dir);

// Expected answers by request key, from a trace's exchanges that carry one (read as a stream).
std::map<RequestKey, std::string> expected_by_key(const std::filesystem::path& trace);

// The expected answers a sweep's run exchanges are matched against: an exchange without one takes
// the answer of the input exchange it re-issued (its source id), or the one `by_key` has for that
// input exchange's request key (for its own key when its source is unknown). Of the input it holds
// each exchange's id, request key and answer, and nothing when neither the input nor `by_key`
// carries an answer.
class ExpectedAnswers {
 public:
  explicit ExpectedAnswers(std::map<RequestKey, std::string> by_key) : by_key_(std::move(by_key)) {}
  // The input exchanges, one at a time (before any attach()).
  void add_input(const Exchange& exchange);
  void attach(Exchange& exchange) const;
  void attach(ExchangeOutputs& exchange) const;
  bool any() const { return any_; }  // an answer somewhere

 private:
  struct Source {
    RequestKey key;
    std::optional<std::string> expected;
  };
  template <class E> void fill(E& exchange) const;
  std::map<RequestKey, std::string> by_key_;
  std::unordered_map<std::uint64_t, Source> input_;
  bool any_ = !by_key_.empty();
};
// The input trace at `path` streamed into ExpectedAnswers (nothing kept when it has no answers
// and `by_key` is empty).
ExpectedAnswers expected_answers(const std::filesystem::path& input, std::map<RequestKey, std::string> by_key);
// Fills `run`'s missing expected answers as ExpectedAnswers does, from exchanges in memory.
void attach_expected(LoadedTrace& run, const LoadedTrace& input,
                     const std::map<RequestKey, std::string>& by_key);

diff::Options diff_options(const Plan& plan, bool expect);

// ---------------------------------------------------------------------------------------------
// Bisect

struct ProbeOutcome {
  bool differs = false;
  std::string detail;                    // e.g. "3 of 20 outputs differ (2 near-ties)"
  std::vector<std::string> divergences;  // one line per differing output: where, first token
};

struct Probe {
  std::size_t index = 0;  // point index; 0 is the baseline
  ProbeOutcome outcome;
  bool verification = false;  // a neighbour probed after the search to check the boundary
};

struct BisectResult {
  std::optional<std::size_t> boundary;  // first differing point
  std::vector<Probe> probes;            // in order, the baseline's own run not included
  bool monotonic = true;                // false when a neighbour contradicted the assumption
  std::string note;
};

// ⌈log2(points)⌉ + 2: the most probes bisect spends on `points` points, the baseline's run included.
std::size_t probe_budget(std::size_t points);

// Binary search over points 1..points-1 for the first that differs from point 0, assuming that
// once outputs differ they keep differing. `probe(i)` is called at most once per point during the
// search (memoized); afterwards the boundary's upper neighbour is probed to check the assumption
// (the lower one was already probed by the search, or is the baseline). `on_probe` sees each probe
// as it completes. With the baseline's run counted, calls ≤ probe_budget(points).
BisectResult bisect(std::size_t points, const std::function<ProbeOutcome(std::size_t)>& probe,
                    const std::function<void(const Probe&)>& on_probe = {});

// Parses "1..64" into its integers (inclusive); throws std::invalid_argument.
std::vector<int> parse_range(std::string_view text);

// One bisect over real runs. `run_for(i)` produces point i's run trace (replaying, or naming a
// recorded run) and returns its path; point 0 is the baseline, run first. Each probe diffs its
// run against the baseline. Probe lines go to `out` as they complete; then the boundary and its
// first divergent tokens. A probe with more failed requests than `max_error_rate` allows aborts
// (RequestsFailed): a boundary found through errors would be meaningless.
struct BisectAxis {
  std::string name;                       // "concurrency", "runs", "values"
  std::vector<std::string> point_labels;  // e.g. "concurrency 16"; [0] is the baseline
  std::function<std::filesystem::path(std::size_t)> run_for;
  diff::Options diff;
  double max_error_rate = 0;
};
class RequestsFailed : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
BisectResult run_bisect(const BisectAxis& axis, std::ostream& out);
// `bisect --json`: the axis, every probe (point, differs, detail, divergences), the boundary (or
// null), whether the monotonic assumption held, and where the runs are (null when none were made).
std::string bisect_json(const BisectAxis& axis, const BisectResult& result,
                        const std::filesystem::path& runs_dir);

// The replay side of bisect --over concurrency: replays `trace` (read from `trace_path`, which
// the run's settings name as its input) at `concurrency` into `out`, with the preflight made once
// for all probes. Throws when the run was interrupted.
std::filesystem::path replay_at(const LoadedTrace& trace, const std::string& trace_path,
                                const ReplayArgs& args, const std::string& target, int concurrency,
                                const std::vector<Label>& labels, const std::filesystem::path& out,
                                const std::atomic<bool>* stop,
                                std::shared_ptr<const replay::Preflight> checked);

}  // namespace retrace::sweep
