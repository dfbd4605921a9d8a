#include "shadow/summary.hpp"

#include <cstdio>

#include <boost/json.hpp>

#include "base/prometheus.hpp"

namespace retrace::shadow {

namespace {

constexpr std::array<std::string_view, 2> kLegNames{"control", "candidate"};

std::string percent(double rate) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f %%", rate * 100);
  return text;
}

std::string interval_text(const std::optional<metrics::Interval>& interval) {
  if (!interval) return "no pairs yet";
  return percent(interval->estimate) + " (95 % interval " + percent(interval->low) + " to " +
         percent(interval->high) + ")";
}

boost::json::value interval_json(const std::optional<metrics::Interval>& interval) {
  if (!interval) return nullptr;
  return {{"estimate", interval->estimate}, {"low", interval->low}, {"high", interval->high}};
}

}  // namespace

std::string_view leg_name(std::size_t leg) { return kLegNames[leg]; }

std::string excess_text(const Verdict& verdict) {
  return std::string(verdict.excess_against_control ? "Candidate's excess over the control: "
                                                    : "Candidate's difference rate (no control given): ") +
         interval_text(verdict.excess) + ".";
}

std::string gate_text(const Verdict& verdict, const RunFacts& facts) {
  if (!facts.fail_if_excess) return "";
  return "Gate --fail-if-excess " + percent(*facts.fail_if_excess) + ": " +
         (gate_fails(verdict, facts) ? "FAIL (the interval's lower bound is above it)"
                                     : "pass (the interval's lower bound is not above it)") + ".";
}

const std::vector<std::string>& verdict_columns() {
  static const std::vector<std::string> columns{
      "leg", "pairs", "identical", "differing", "near ties", "real changes", "errors", "dropped: full queue / at stop",
      "difference rate", "TTFT Δ p50 / p99 ms", "ITL Δ p50 / p99 ms"};
  return columns;
}

std::vector<std::string> verdict_cells(const Verdict& verdict, std::size_t leg) {
  const auto& f = verdict.legs[leg];
  char ttft[64], itl[64];
  std::snprintf(ttft, sizeof ttft, "%.2f / %.2f", verdict.ttft_delta[leg].p50, verdict.ttft_delta[leg].p99);
  std::snprintf(itl, sizeof itl, "%.3f / %.3f", verdict.itl_delta[leg].p50, verdict.itl_delta[leg].p99);
  return {std::string(kLegNames[leg]), std::to_string(f.pairs), std::to_string(f.identical),
          std::to_string(f.differing), std::to_string(f.near_ties), std::to_string(f.real_changes),
          std::to_string(f.errors),
          std::to_string(f.dropped_queue_full) + " / " + std::to_string(f.dropped_at_stop),
          interval_text(leg == 0 ? verdict.control_rate : verdict.candidate_rate), ttft, itl};
}

bool gate_fails(const Verdict& verdict, const RunFacts& facts) {
  return facts.fail_if_excess && verdict.excess && verdict.excess->low > *facts.fail_if_excess;
}

std::string summary_json(const Verdict& verdict, const RunFacts& facts) {
  boost::json::object root;
  root["state"] = facts.state;
  root["elapsed_seconds"] = facts.elapsed_seconds;
  root["primary"] = {{"url", facts.primary}, {"forwarded", facts.forwarded},
                     {"sampled_out", facts.sampled_out}, {"written", verdict.primary_written}};
  boost::json::object legs;
  for (std::size_t leg = 0; leg < 2; ++leg) {
    const auto& figures = verdict.legs[leg];
    if (!figures.enabled) continue;
    boost::json::object histogram;
    for (auto [bucket, count] : figures.first_divergence) histogram[std::to_string(bucket)] = count;
    legs[kLegNames[leg]] = {
        {"url", figures.url}, {"written", figures.written}, {"pairs", figures.pairs},
        {"identical", figures.identical}, {"differing", figures.differing},
        {"near_ties", figures.near_ties}, {"real_changes", figures.real_changes},
        {"unknown_changes", figures.unknown_changes}, {"not_compared", figures.not_compared},
        {"errors", figures.errors}, {"primary_errors", figures.primary_errors},
        {"dropped", figures.dropped}, {"dropped_queue_full", figures.dropped_queue_full},
        {"dropped_at_stop", figures.dropped_at_stop}, {"unpaired", figures.unpaired},
        {"difference_rate", interval_json(leg == 0 ? verdict.control_rate : verdict.candidate_rate)},
        {"first_divergence_histogram", std::move(histogram)},
        {"ttft_delta_ms", {{"count", verdict.ttft_delta[leg].count}, {"p50", verdict.ttft_delta[leg].p50},
                           {"p99", verdict.ttft_delta[leg].p99}}},
        {"itl_delta_ms", {{"count", verdict.itl_delta[leg].count}, {"p50", verdict.itl_delta[leg].p50},
                          {"p99", verdict.itl_delta[leg].p99}}}};
  }
  root["legs"] = std::move(legs);
  root["excess"] = interval_json(verdict.excess);
  root["excess_against"] = verdict.excess_against_control ? "control" : "none";
  if (facts.fail_if_excess) {
    root["fail_if_excess"] = *facts.fail_if_excess;
    root["gate"] = gate_fails(verdict, facts) ? "fail" : "pass";
  }
  return boost::json::serialize(root) + "\n";
}

std::string summary_markdown(const Verdict& verdict, const RunFacts& facts) {
  std::string md = "# retrace shadow\n\n";
  md += "State: " + facts.state + " after " + std::to_string(static_cast<long long>(facts.elapsed_seconds)) +
        " s. Primary " + facts.primary + ": " + std::to_string(facts.forwarded) + " requests answered, " +
        std::to_string(verdict.primary_written) + " mirrored and recorded.\n\n";
  auto row = [&md](const std::vector<std::string>& cells) {
    md += "|";
    for (const auto& cell : cells) md += " " + cell + " |";
    md += "\n";
  };
  row(verdict_columns());
  md += "|";
  for (std::size_t i = 0; i < verdict_columns().size(); ++i) md += "---|";
  md += "\n";
  for (std::size_t leg = 0; leg < 2; ++leg)
    if (verdict.legs[leg].enabled) row(verdict_cells(verdict, leg));
  md += "\n";
  md += excess_text(verdict) + "\n";
  if (facts.fail_if_excess) md += "\n" + gate_text(verdict, facts) + "\n";
  md += "\nEach pair's first divergent token and part: `retrace diff` on this directory.\n";
  return md;
}

std::string metrics_text(const Verdict& verdict) {
  PrometheusText text;
  auto per_leg = [&](std::string_view name, std::string_view help, auto value_of) {
    text.family(name, "counter", help);
    for (std::size_t leg = 0; leg < 2; ++leg)
      if (verdict.legs[leg].enabled) text.sample(name, {{"leg", kLegNames[leg]}}, std::uint64_t(value_of(verdict.legs[leg])));
  };
  per_leg("retrace_shadow_pairs_total", "Mirrored exchanges compared with their primary exchange, per leg.",
          [](const LegFigures& f) { return f.pairs; });
  constexpr std::string_view differing = "retrace_shadow_differing_total";
  text.family(differing, "counter", "Compared pairs whose outputs differ, per leg and class.");
  for (std::size_t leg = 0; leg < 2; ++leg) {
    const auto& f = verdict.legs[leg];
    if (!f.enabled) continue;
    text.sample(differing, {{"leg", kLegNames[leg]}, {"class", "near_tie"}}, f.near_ties);
    text.sample(differing, {{"leg", kLegNames[leg]}, {"class", "real_change"}}, f.real_changes);
    text.sample(differing, {{"leg", kLegNames[leg]}, {"class", "unknown"}}, f.unknown_changes);
  }
  per_leg("retrace_shadow_errors_total", "Mirror exchanges that failed where the primary's did not.",
          [](const LegFigures& f) { return f.errors; });
  constexpr std::string_view dropped = "retrace_shadow_dropped_total";
  text.family(dropped, "counter",
              "Requests not sent to a mirror, per leg and reason: queue_full (--mirror-queue was full: the "
              "mirror falls behind), stopped (shadow was stopping: refused, or still queued at --drain-timeout).");
  for (std::size_t leg = 0; leg < 2; ++leg) {
    const auto& f = verdict.legs[leg];
    if (!f.enabled) continue;
    text.sample(dropped, {{"leg", kLegNames[leg]}, {"reason", "queue_full"}}, f.dropped_queue_full);
    text.sample(dropped, {{"leg", kLegNames[leg]}, {"reason", "stopped"}}, f.dropped_at_stop);
  }
  constexpr std::string_view first = "retrace_shadow_first_divergence_total";
  text.family(first, "counter",
              "Differing pairs by the token index of their first divergence, in buckets from_token "
              "0, 1, 2, 4, 8, ... (each up to the next).");
  for (std::size_t leg = 0; leg < 2; ++leg)
    for (auto [bucket, count] : verdict.legs[leg].first_divergence) {
      auto from = std::to_string(bucket);
      text.sample(first, {{"leg", kLegNames[leg]}, {"from_token", from}}, count);
    }
  constexpr std::string_view rate = "retrace_shadow_difference_rate";
  text.family(rate, "gauge", "Each leg's difference rate against the primary, with its 95 % Wilson bounds.");
  for (std::size_t leg = 0; leg < 2; ++leg) {
    const auto& interval = leg == 0 ? verdict.control_rate : verdict.candidate_rate;
    if (!verdict.legs[leg].enabled || !interval) continue;
    text.sample(rate, {{"leg", kLegNames[leg]}, {"bound", "estimate"}}, interval->estimate);
    text.sample(rate, {{"leg", kLegNames[leg]}, {"bound", "low"}}, interval->low);
    text.sample(rate, {{"leg", kLegNames[leg]}, {"bound", "high"}}, interval->high);
  }
  constexpr std::string_view excess = "retrace_shadow_excess";
  text.family(excess, "gauge",
              "The candidate's difference rate minus the control's, with Newcombe's 95 % interval "
              "(the candidate's own rate when no control is given).");
  if (verdict.excess) {
    text.sample(excess, {{"bound", "estimate"}}, verdict.excess->estimate);
    text.sample(excess, {{"bound", "low"}}, verdict.excess->low);
    text.sample(excess, {{"bound", "high"}}, verdict.excess->high);
  }
  auto deltas = [&](std::string_view name, std::string_view help, const std::array<Percentiles, 2>& of) {
    text.family(name, "gauge", help);
    for (std::size_t leg = 0; leg < 2; ++leg) {
      if (!verdict.legs[leg].enabled || of[leg].count == 0) continue;
      text.sample(name, {{"leg", kLegNames[leg]}, {"quantile", "0.5"}}, of[leg].p50 / 1e3);
      text.sample(name, {{"leg", kLegNames[leg]}, {"quantile", "0.99"}}, of[leg].p99 / 1e3);
    }
  };
  deltas("retrace_shadow_ttft_delta_seconds", "The mirror's time to first token minus the primary's, per pair.",
         verdict.ttft_delta);
  deltas("retrace_shadow_itl_delta_seconds", "The mirror's mean inter-token latency minus the primary's, per pair.",
         verdict.itl_delta);
  return text.take();
}

std::string final_lines(const Verdict& verdict, const RunFacts& facts) {
  std::string text = "retrace shadow: " + facts.state + "; primary " + facts.primary + " answered " +
                     std::to_string(facts.forwarded) + " request(s), " + std::to_string(verdict.primary_written) +
                     " recorded\n";
  for (std::size_t leg = 0; leg < 2; ++leg) {
    const auto& f = verdict.legs[leg];
    if (!f.enabled) continue;
    text += "retrace shadow: " + std::string(kLegNames[leg]) + " " + f.url + ": compared " +
            std::to_string(f.pairs) + " pair(s), " + std::to_string(f.differing) + " differing (" +
            std::to_string(f.near_ties) + " near ties, " + std::to_string(f.real_changes) + " real changes), " +
            std::to_string(f.errors) + " error(s), " + std::to_string(f.dropped) + " dropped (" +
            std::to_string(f.dropped_queue_full) + " at the full queue, " + std::to_string(f.dropped_at_stop) +
            " at stop), " +
            std::to_string(f.not_compared + f.primary_errors + f.unpaired) + " not compared\n";
  }
  text += std::string("retrace shadow: ") +
          (verdict.excess_against_control ? "candidate's excess over the control: "
                                          : "candidate's difference rate: ") +
          interval_text(verdict.excess) + "\n";
  if (facts.fail_if_excess)
    text += "retrace shadow: --fail-if-excess " + percent(*facts.fail_if_excess) + ": " +
            (gate_fails(verdict, facts) ? "FAIL" : "pass") + "\n";
  return text;
}

}  // namespace retrace::shadow
