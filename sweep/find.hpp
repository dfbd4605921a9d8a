// `retrace sweep --find`: a capacity search, a sweep that chooses its next point. It brackets by
// doubling from --find-from, then bisects (integers for concurrency, to --precision for rate and
// speed), judging each probe on SLO attainment (the fraction of its requests meeting every limit)
// with a Clopper–Pearson interval, an error-rate limit, and, with --stable, its outputs against
// the baseline's (the first, lowest load) beside a control (the baseline run again).
//
// The decisions (judge, next_probe) are pure functions of the probes so far: the unit tests drive
// them on synthetic curves. The monotone fit is an isotonic regression (pool-adjacent-violators)
// over all probes, so one noisy probe cannot misplace the boundary.
//
// A search directory holds plan.json (the sweep plan: settings and every run made), one trace per
// run (c16-r1.rtrace; c16-r2.rtrace when the probe was extended; c1-control.rtrace),
// search_history.json (the settings and every probe, rewritten atomically after each run: what
// --resume continues from), summary.json, summary.md, summary.csv and report.html.
#pragma once

#include <atomic>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "metrics/stats.hpp"
#include "report/find_summary.hpp"
#include "sweep/sweep.hpp"

namespace retrace::sweep {

using report::FindAnswer;
using report::FindProbe;
using report::FindSummary;

using report::kCliffDrop;
// Rate and speed searches that fail at --find-from halve down to this fraction of it, then stop.
inline constexpr double kLowestFraction = 1.0 / 64;

// Successes out of trials: a block of the isotonic fit.
struct Pooled {
  double k = 0, n = 0;
  double rate() const { return n > 0 ? k / n : 0; }
};

// Pool-adjacent-violators: the non-increasing fit of `points` (in load order), weighted by n.
// Returns, for each point, the pooled block it falls in (its fitted value is the block's rate).
std::vector<Pooled> isotonic_non_increasing(const std::vector<Pooled>& points);

// Fills every probe's fit, interval and verdicts, and the answer, from the probes so far.
// `summary.slo` empty: only --stable is searched.
void judge(FindSummary& summary);

// What to run next: a load (a new probe, or an undecided boundary probe again), the control, or
// nothing when the search is resolved. Call after judge().
struct NextProbe {
  double level = 0;
  bool control = false;
};
std::optional<NextProbe> next_probe(const FindSummary& summary);

// The figures of one run (a replay at one load) the search needs; pure data.
struct RunOutcome {
  std::string name;
  std::size_t requests = 0, met = 0, errors = 0;
  std::vector<report::ConstraintFigure> constraints;
  double requests_per_s = 0, output_tokens_per_s = 0;
  bool oversaturated = false;
  std::optional<std::size_t> compared, differing;
};
// Adds a run to the probe at its load (pooled with earlier runs there), or as a new probe.
void add_run(FindSummary& summary, double level, bool control, const RunOutcome& run);

// Grows an open-loop run's backlog (requests due by the schedule, not yet finished) sample by
// sample, and says when it keeps growing: over-saturation. Pure; fed from replay's progress.
class BacklogWatch {
 public:
  // `floor`: the smallest backlog that counts (requests a healthy server may hold in flight).
  explicit BacklogWatch(double floor) : floor_(floor) {}
  // One sample a second or so; true once the backlog has grown in each of the last kWindows
  // samples and stands above the floor.
  bool observe(double backlog);
  static constexpr int kWindows = 5;

 private:
  double floor_;
  double last_ = -1;
  int growing_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Running a search

struct FindIo {
  std::ostream* log = nullptr;              // progress lines
  const std::atomic<bool>* stop = nullptr;  // a stopped search keeps what finished
};

// Runs the search in `dir` (new or resumed: `summary` holds the probes so far), rewriting plan.json
// and search_history.json after every run, then writes the summaries. Returns false when stopped.
// Throws on set-up errors (unreadable trace, bad target) before any traffic.
bool run_find(Plan& plan, FindSummary& summary, const std::filesystem::path& dir, const FindIo& io);

// search_history.json: written atomically (base/private_file.hpp), read back for --resume.
void save_history(const FindSummary& summary, const std::filesystem::path& dir);
// Throws std::runtime_error naming the file when it is missing or not a search history.
FindSummary load_history(const std::filesystem::path& dir);

}  // namespace retrace::sweep
