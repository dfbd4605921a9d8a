// A capacity search's results (`retrace sweep --find`): every probe with its SLO attainment and
// interval, and the answer (the largest load that meets the SLOs, the smallest that does not, the
// binding constraint, the largest load whose answers stay the same). sweep/find.hpp fills these;
// this file renders them: summary.json, summary.md, summary.csv and the HTML page's model.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <boost/describe/class.hpp>

#include "report/html.hpp"

namespace retrace::report {

// One SLO limit's own attainment at a probe: the fraction of requests within `threshold_ms`, and
// the figure observed at the target attainment's percentile (e.g. p95 e2e for --attainment 0.95).
// "ttft/tpot" (--slo ttft:16tpot) is a limit on TTFT in the request's own TPOTs: its threshold is
// `threshold_tpots` (threshold_ms 0), its observed figure the TTFT's in ms.
struct ConstraintFigure {
  std::string name;  // "ttft", "tpot", "e2e", "ttft/tpot"
  double threshold_ms = 0;
  std::size_t met = 0;
  double observed_ms = 0;
  std::optional<double> threshold_tpots;
};
BOOST_DESCRIBE_STRUCT(ConstraintFigure, (), (name, threshold_ms, met, observed_ms, threshold_tpots))

// A probe: every run made at one load, pooled (an undecided probe is extended by another run).
struct FindProbe {
  double level = 0;
  std::vector<std::string> runs;  // run names, "c16-r1", "c16-r2"; files are NAME.rtrace
  std::size_t order = 0;          // 1-based: when the search first probed this load
  std::size_t requests = 0, met = 0, errors = 0;  // met: completed and within every limit
  std::vector<ConstraintFigure> constraints;
  double requests_per_s = 0, output_tokens_per_s = 0;  // the last run's
  bool oversaturated = false;  // an open-loop run cut because its backlog kept growing
  bool control = false;        // the baseline's repeat (--stable): not a probe of the search
  // --stable: outputs compared with the baseline and how many differ (missing ones included).
  std::optional<std::size_t> compared, differing;
  // Filled by the search from the monotone fit over all probes:
  double attainment = 0;           // this probe's own fraction met
  double fitted = 0;               // the isotonic fit's value at this load
  double ci_low = 0, ci_high = 1;  // Clopper–Pearson over the fit's pooled block
  std::string verdict;             // "pass", "fail", "undecided"
  std::string stable_verdict;      // with --stable: "same" or "differs"; else ""
};
BOOST_DESCRIBE_STRUCT(FindProbe, (), (level, runs, order, requests, met, errors, constraints, requests_per_s,
                                      output_tokens_per_s, oversaturated, control, compared, differing,
                                      attainment, fitted, ci_low, ci_high, verdict, stable_verdict))

struct FindAnswer {
  // "found" (exit 0), "none" (no probed load meets the SLOs: exit 1), "unresolved" (the
  // budget ran out before the boundary was resolved: exit 3).
  std::string status = "unresolved";
  std::optional<double> feasible_max, infeasible_min;
  std::optional<ConstraintFigure> binding;  // at infeasible_min: the limit met least often
  bool cliff = false;                       // attainment fell by kCliffDrop or more in one step
  bool undecided = false;  // a probe at the boundary stayed undecided after its extensions
  std::optional<double> stable_max, unstable_min;  // with --stable
  std::string stable_status;                       // "found", "none", "unresolved" with --stable
  std::vector<std::string> notes;
};
BOOST_DESCRIBE_STRUCT(FindAnswer, (), (status, feasible_max, infeasible_min, binding, cliff, undecided, stable_max,
                                       unstable_min, stable_status, notes))

struct FindSummary {
  std::string trace, target, axis;  // axis: concurrency, rate, speed
  std::string slo;                  // as given, e.g. "e2e:2s"; "" for a search on --stable only
  double attainment = 0.95;
  double confidence = 0.90;  // two-sided: each side (1 − confidence) / 2
  std::optional<double> stable;      // --stable RATE
  std::optional<double> control_rate;  // the control's rate of differing outputs
  double precision = 0.05;
  std::size_t max_probes = 16;  // replays, the control and extensions included
  double start = 1;             // the first load, also the baseline
  int extensions = 1;           // more runs an undecided probe at the boundary may get
  double max_error_rate = 0;
  std::vector<FindProbe> probes;  // by load, ascending; the control after the baseline
  FindAnswer answer;
  std::size_t runs = 0;  // replays made, the control and extensions included
};
BOOST_DESCRIBE_STRUCT(FindSummary, (), (trace, target, axis, slo, attainment, confidence, stable, control_rate,
                                        precision, max_probes, start, extensions, max_error_rate, probes, answer,
                                        runs))

// An attainment fall this large between the boundary's two loads is a cliff.
inline constexpr double kCliffDrop = 0.2;

// Exit statuses of `sweep --find`.
inline constexpr int kFindFound = 0, kFindNone = 1, kFindUnresolved = 3;
int find_exit_status(const FindAnswer& answer);

std::string find_to_json(const FindSummary& summary);
std::string find_to_markdown(const FindSummary& summary);
std::string find_to_csv(const FindSummary& summary);
// The terminal line of one probe as it completes ("probe 3: concurrency 4: 98 of 100 met ...").
std::string find_probe_line(const FindSummary& summary, const FindProbe& probe);
// The HTML page: attainment against load with its intervals, the target and the boundary marked,
// throughput beside it, and the probe table.
HtmlReport find_report(const FindSummary& summary);

}  // namespace retrace::report
