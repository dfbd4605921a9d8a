// The capacity search's decisions, pure functions of the probes so far (sweep/find.hpp): the
// isotonic fit, each probe's verdicts, the answer, and the next load to probe.
#include <algorithm>
#include <cmath>

#include "metrics/statistics.hpp"
#include "replay/flags.hpp"
#include "report/text.hpp"
#include "sweep/find.hpp"

namespace retrace::sweep {

namespace {

bool is_concurrency(const FindSummary& summary) { return summary.axis == "concurrency"; }

// Whether the bracket [low, high] is as narrow as the search resolves: adjacent integers for
// concurrency, --precision relative to the lower end for rate and speed.
bool resolved(const FindSummary& summary, double low, double high) {
  if (is_concurrency(summary)) return high - low <= 1;
  return high - low <= summary.precision * low * (1 + 1e-9);
}

// The largest load replay runs on the axis (replay/flags.hpp): the doubling stops there.
double ceiling(const FindSummary& summary) {
  if (is_concurrency(summary)) return replay::kMaxInFlight;
  return summary.axis == "speed" ? replay::kMaxSpeed : replay::kMaxRate;
}

// Above `level`: twice it, at most the axis's ceiling; nullopt at the ceiling.
std::optional<double> grow(const FindSummary& summary, double level) {
  if (level >= ceiling(summary)) return std::nullopt;
  return std::min(level * 2, ceiling(summary));
}

// Below `level`: half of it (concurrency at least 1); nullopt at the axis's floor.
std::optional<double> shrink(const FindSummary& summary, double level) {
  if (is_concurrency(summary)) {
    if (level <= 1) return std::nullopt;
    return std::max(1.0, std::floor(level / 2));
  }
  if (level <= summary.start * kLowestFraction * (1 + 1e-9)) return std::nullopt;
  return level / 2;
}

// Between two probed loads: the integer midpoint, or the midpoint to 3 significant digits.
double middle(const FindSummary& summary, double low, double high) {
  if (is_concurrency(summary)) return std::floor((low + high) / 2);
  double mid = (low + high) / 2;
  double scale = std::pow(10.0, std::floor(std::log10(mid)) - 2);
  double rounded = std::round(mid / scale) * scale;
  return rounded > low && rounded < high ? rounded : mid;
}

const FindProbe* probe_at(const FindSummary& summary, double level, bool control = false) {
  for (const auto& probe : summary.probes)
    if (probe.level == level && probe.control == control) return &probe;
  return nullptr;
}

// The one-sided confidence of each end of a two-sided interval at summary.confidence.
double side(const FindSummary& summary) { return 1 - (1 - summary.confidence) / 2; }

void judge_slo(FindSummary& summary, std::vector<FindProbe*>& probes) {
  auto& answer = summary.answer;
  std::vector<Pooled> points;
  for (const auto* probe : probes) points.push_back({double(probe->met), double(probe->requests)});
  auto blocks = isotonic_non_increasing(points);
  bool forced = false;  // over-saturated or too many errors here: this load and every higher fail
  std::optional<std::size_t> last_pass, first_fail;
  for (std::size_t i = 0; i < probes.size(); ++i) {
    auto& probe = *probes[i];
    probe.attainment = probe.requests ? double(probe.met) / double(probe.requests) : 0;
    probe.fitted = blocks[i].rate();
    auto k = static_cast<std::size_t>(blocks[i].k), n = static_cast<std::size_t>(blocks[i].n);
    probe.ci_low = metrics::clopper_pearson_lower(k, n, side(summary)).value_or(0);
    probe.ci_high = metrics::clopper_pearson_upper(k, n, side(summary)).value_or(1);
    forced = forced || probe.oversaturated ||
             replay::failure_verdict(probe.errors, probe.requests, summary.max_error_rate).has_value();
    bool passes = !forced && probe.fitted >= summary.attainment;
    probe.verdict = forced                                  ? "fail"
                    : probe.ci_low >= summary.attainment    ? "pass"
                    : probe.ci_high < summary.attainment    ? "fail"
                                                            : "undecided";
    if (passes) last_pass = i;
    else if (!first_fail) first_fail = i;
  }
  if (last_pass) answer.feasible_max = probes[*last_pass]->level;
  if (first_fail) answer.infeasible_min = probes[*first_fail]->level;
  if (first_fail) {  // the limit met least often where the SLOs first fail
    const auto& failing = *probes[*first_fail];
    for (const auto& constraint : failing.constraints)
      if (!answer.binding || constraint.met < answer.binding->met) answer.binding = constraint;
  }
  if (!last_pass && first_fail) {
    answer.status = shrink(summary, probes.front()->level) ? "unresolved" : "none";
  } else if (last_pass && first_fail &&
             resolved(summary, probes[*last_pass]->level, probes[*first_fail]->level)) {
    answer.status = "found";
    const auto &low = *probes[*last_pass], &high = *probes[*first_fail];
    answer.cliff = low.fitted - high.fitted >= kCliffDrop;
    answer.undecided = low.verdict == "undecided" || high.verdict == "undecided";
    if (answer.undecided)
      answer.notes.push_back("the boundary is uncertain: the interval of attainment at " +
                             report::level_text(low.verdict == "undecided" ? low.level : high.level) +
                             " straddles the target after its extensions; more requests per probe "
                             "(--requests) would settle it");
  }
  if (last_pass && !first_fail && probes[*last_pass]->level >= ceiling(summary))
    answer.notes.push_back("every load probed met the SLOs up to " + report::level_text(ceiling(summary)) +
                           ", the most replay runs on this axis: the capacity is at least that");
  for (const auto* probe : probes)
    if (probe->oversaturated)
      answer.notes.push_back("at " + report::level_text(probe->level) +
                             " the backlog kept growing: the run was cut and counts as failing");
}

void judge_stable(FindSummary& summary, std::vector<FindProbe*>& probes) {
  auto& answer = summary.answer;
  const FindProbe* control = probe_at(summary, summary.start, true);
  if (!control || !control->compared) return;
  summary.control_rate =
      *control->compared ? double(control->differing.value_or(0)) / double(*control->compared) : 0.0;
  double threshold = *summary.stable + *summary.control_rate;
  std::vector<Pooled> points;
  std::vector<FindProbe*> compared;
  for (auto* probe : probes)
    if (probe->compared) {
      compared.push_back(probe);
      points.push_back({double(*probe->compared - probe->differing.value_or(0)), double(*probe->compared)});
    }
  auto blocks = isotonic_non_increasing(points);
  bool differs = false;  // once the answers differ, every higher load is taken to differ too
  for (std::size_t i = 0; i < compared.size(); ++i) {
    auto n = static_cast<std::size_t>(blocks[i].n);
    auto differing = n - static_cast<std::size_t>(blocks[i].k);
    differs = differs || metrics::clopper_pearson_lower(differing, n, side(summary)).value_or(0) > threshold;
    compared[i]->stable_verdict = differs ? "differs" : "same";
    if (!differs) answer.stable_max = compared[i]->level;
    else if (!answer.unstable_min) answer.unstable_min = compared[i]->level;
  }
  if (answer.stable_max && !answer.unstable_min && *answer.stable_max >= ceiling(summary))
    answer.notes.push_back("the answers stayed the same up to " + report::level_text(ceiling(summary)) +
                           ", the most replay runs on this axis");
  if (answer.stable_max && answer.unstable_min && resolved(summary, *answer.stable_max, *answer.unstable_min))
    answer.stable_status = "found";
  else if (answer.stable_max && !answer.unstable_min && !summary.slo.empty() && answer.infeasible_min &&
           answer.status != "unresolved")
    answer.stable_status = "found";  // the same answers at every load probed below the SLO boundary
}

// One more run at an undecided boundary probe, while it has extensions left.
std::optional<NextProbe> extension(const FindSummary& summary, std::initializer_list<std::optional<double>> levels) {
  for (const auto& level : levels) {
    if (!level) continue;
    const auto* probe = probe_at(summary, *level);
    if (probe && probe->verdict == "undecided" && probe->runs.size() < std::size_t(1 + summary.extensions))
      return NextProbe{*level};
  }
  return std::nullopt;
}

// Bracket, then bisect; only the final boundary's probes are extended (an undecided probe met on
// the way is settled by the probes around it, through the fit).
std::optional<NextProbe> slo_step(const FindSummary& summary) {
  const auto& answer = summary.answer;
  if (!answer.infeasible_min) {
    if (auto higher = grow(summary, *answer.feasible_max)) return NextProbe{*higher};
    return std::nullopt;  // every load up to the ceiling met the SLOs (judge_slo says so)
  }
  if (!answer.feasible_max) {
    if (auto lower = shrink(summary, *answer.infeasible_min)) return NextProbe{*lower};
    return extension(summary, {answer.infeasible_min});
  }
  if (!resolved(summary, *answer.feasible_max, *answer.infeasible_min))
    return NextProbe{middle(summary, *answer.feasible_max, *answer.infeasible_min)};
  return extension(summary, {answer.feasible_max, answer.infeasible_min});
}

std::optional<NextProbe> stable_step(const FindSummary& summary) {
  const auto& answer = summary.answer;
  if (!answer.stable_max) return std::nullopt;
  if (!answer.unstable_min) {
    auto next = grow(summary, *answer.stable_max);
    if (!next) return std::nullopt;  // the same answers up to the ceiling (judge_stable says so)
    if (!summary.slo.empty() && (!answer.infeasible_min || *next >= *answer.infeasible_min))
      return std::nullopt;  // past the SLO boundary the answers no longer matter
    return NextProbe{*next};
  }
  if (resolved(summary, *answer.stable_max, *answer.unstable_min)) return std::nullopt;
  return NextProbe{middle(summary, *answer.stable_max, *answer.unstable_min)};
}

}  // namespace

std::vector<Pooled> isotonic_non_increasing(const std::vector<Pooled>& points) {
  // Blocks on a stack; a new point that rises above the block before it is pooled with it, and
  // again while the pooled block still rises above its predecessor.
  struct Block {
    Pooled pooled;
    std::size_t count;
  };
  std::vector<Block> blocks;
  for (const auto& point : points) {
    blocks.push_back({point, 1});
    while (blocks.size() > 1) {
      auto& last = blocks.back();
      auto& before = blocks[blocks.size() - 2];
      // Compare rates without dividing by zero: a block with no trials never violates.
      if (last.pooled.n == 0 || before.pooled.n == 0 ||
          last.pooled.k * before.pooled.n <= before.pooled.k * last.pooled.n)
        break;
      before.pooled.k += last.pooled.k;
      before.pooled.n += last.pooled.n;
      before.count += last.count;
      blocks.pop_back();
    }
  }
  std::vector<Pooled> fitted;
  fitted.reserve(points.size());
  for (const auto& block : blocks) fitted.insert(fitted.end(), block.count, block.pooled);
  return fitted;
}

void judge(FindSummary& summary) {
  summary.answer = FindAnswer{};
  std::stable_sort(summary.probes.begin(), summary.probes.end(), [](const FindProbe& a, const FindProbe& b) {
    return a.level != b.level ? a.level < b.level : a.control < b.control;
  });
  std::vector<FindProbe*> probes;
  for (auto& probe : summary.probes)
    if (!probe.control) probes.push_back(&probe);
  if (probes.empty()) return;
  if (!summary.slo.empty()) judge_slo(summary, probes);
  else summary.answer.status = "";
  if (summary.stable) {
    summary.answer.stable_status = "unresolved";
    judge_stable(summary, probes);
  }
}

std::optional<NextProbe> next_probe(const FindSummary& summary) {
  if (summary.probes.empty()) return NextProbe{summary.start};
  if (summary.stable && !probe_at(summary, summary.start, true)) return NextProbe{summary.start, true};
  if (!summary.slo.empty())
    if (auto step = slo_step(summary)) return step;
  if (summary.stable) return stable_step(summary);
  return std::nullopt;
}

void add_run(FindSummary& summary, double level, bool control, const RunOutcome& run) {
  ++summary.runs;
  auto it = std::find_if(summary.probes.begin(), summary.probes.end(),
                         [&](const FindProbe& p) { return p.level == level && p.control == control; });
  if (it == summary.probes.end()) {
    FindProbe probe;
    probe.level = level;
    probe.control = control;
    probe.order = summary.probes.size() + 1;
    probe.constraints = run.constraints;
    for (auto& constraint : probe.constraints) constraint.met = 0;
    summary.probes.push_back(std::move(probe));
    it = summary.probes.end() - 1;
  }
  auto& probe = *it;
  probe.runs.push_back(run.name);
  probe.requests += run.requests;
  probe.met += run.met;
  probe.errors += run.errors;
  for (std::size_t i = 0; i < probe.constraints.size() && i < run.constraints.size(); ++i) {
    probe.constraints[i].met += run.constraints[i].met;
    probe.constraints[i].observed_ms = run.constraints[i].observed_ms;  // the latest run's
  }
  probe.requests_per_s = run.requests_per_s;
  probe.output_tokens_per_s = run.output_tokens_per_s;
  probe.oversaturated = probe.oversaturated || run.oversaturated;
  if (run.compared) {
    probe.compared = probe.compared.value_or(0) + *run.compared;
    probe.differing = probe.differing.value_or(0) + run.differing.value_or(0);
  }
  judge(summary);
}

bool BacklogWatch::observe(double backlog) {
  growing_ = last_ >= 0 && backlog > last_ ? growing_ + 1 : 0;
  last_ = backlog;
  return growing_ >= kWindows && backlog > floor_;
}

}  // namespace retrace::sweep
