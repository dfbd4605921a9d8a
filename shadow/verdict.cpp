#include "shadow/verdict.hpp"

#include <algorithm>
#include <bit>

namespace retrace::shadow {

std::size_t leg_index(Leg leg) { return leg == Leg::control ? 0 : 1; }

Percentiles percentiles_of(std::vector<double> samples) {
  Percentiles result;
  result.count = samples.size();
  if (samples.empty()) return result;
  auto at = [&](double percent) {
    auto rank = static_cast<std::size_t>(percent / 100 * double(samples.size() - 1) + 0.5);
    std::nth_element(samples.begin(), samples.begin() + rank, samples.end());
    return samples[rank];
  };
  result.p50 = at(50);
  result.p99 = at(99);
  return result;
}

Pairing::Pairing(bool with_control, diff::Options options)
    : with_control_(with_control), options_(std::move(options)) {
  legs_[0].enabled = with_control;
  legs_[1].enabled = true;
}

void Pairing::set_url(Leg leg, std::string url) {
  std::lock_guard lock(mutex_);
  legs_[leg_index(leg)].url = std::move(url);
}

Pairing::Half Pairing::half_of(const Exchange& exchange) {
  Half half;
  half.error = exchange.error;
  half.method = exchange.request.method;
  half.choices = exchange.choices;
  std::int64_t first = -1, last = -1;
  std::size_t tokens = 0;
  for (const auto& choice : exchange.choices)
    for (const auto& token : choice.tokens) {
      if (first < 0 || token.offset_ns < first) first = token.offset_ns;
      last = std::max(last, token.offset_ns);
      ++tokens;
    }
  half.ttft_ns = first >= 0 ? first : exchange.first_byte_ns;
  if (tokens >= 2) half.itl_ms = double(last - first) / 1e6 / double(tokens - 1);
  return half;
}

void Pairing::compare(std::size_t leg, const Half& primary, const Half& mirror) {
  auto& figures = legs_[leg];
  if (primary.error.kind != ErrorKind::none) {
    ++figures.primary_errors;
    return;
  }
  if (mirror.error.kind != ErrorKind::none) {
    ++figures.errors;
    return;
  }
  if (primary.choices.empty() && mirror.choices.empty() && primary.method == "POST") {
    ++figures.not_compared;
    return;
  }
  ++figures.pairs;
  auto divergences = diff::compare_parts(primary.choices, mirror.choices, options_);
  if (divergences.empty()) {
    ++figures.identical;
  } else {
    ++figures.differing;
    bool real = false, unknown = false;
    for (const auto& divergence : divergences) {
      real = real || divergence.classification == diff::Classification::real_change;
      unknown = unknown || divergence.classification == diff::Classification::unknown;
    }
    ++(real ? figures.real_changes : unknown ? figures.unknown_changes : figures.near_ties);
    auto index = divergences.front().baseline_index;
    std::size_t bucket = index == 0 ? 0 : std::bit_floor(index);
    ++figures.first_divergence[bucket];
  }
  if (primary.ttft_ns >= 0 && mirror.ttft_ns >= 0 && figures.ttft_delta_ms.size() < kMaxDeltaSamples)
    figures.ttft_delta_ms.push_back(double(mirror.ttft_ns - primary.ttft_ns) / 1e6);
  if (primary.itl_ms >= 0 && mirror.itl_ms >= 0 && figures.itl_delta_ms.size() < kMaxDeltaSamples)
    figures.itl_delta_ms.push_back(mirror.itl_ms - primary.itl_ms);
}

// Forgets a slot once the primary's half and every leg's are in (or will never come).
void Pairing::settle(std::map<std::uint64_t, Slot>::iterator slot) {
  const auto& done = slot->second.done;
  if (slot->second.primary && done[1] && (done[0] || !with_control_)) pending_.erase(slot);
}

void Pairing::bound() {
  while (pending_.size() > kMaxPending) {
    auto& slot = pending_.begin()->second;
    for (std::size_t leg = 0; leg < 2; ++leg)
      if (legs_[leg].enabled && !slot.done[leg]) ++legs_[leg].unpaired;
    pending_.erase(pending_.begin());
  }
}

void Pairing::on_primary(std::uint64_t tag, const Exchange& exchange) {
  if (tag == 0) return;  // not offered to the mirrors
  auto half = half_of(exchange);
  std::lock_guard lock(mutex_);
  ++primary_written_;
  auto slot = pending_.try_emplace(tag).first;
  for (std::size_t leg = 0; leg < 2; ++leg)
    if (slot->second.mirrors[leg]) {
      compare(leg, half, *slot->second.mirrors[leg]);
      slot->second.mirrors[leg].reset();
      slot->second.done[leg] = true;
    }
  slot->second.primary = std::move(half);
  settle(slot);
  bound();
}

void Pairing::on_mirror(Leg which, std::uint64_t tag, const Exchange& exchange) {
  auto leg = leg_index(which);
  auto half = half_of(exchange);
  std::lock_guard lock(mutex_);
  ++legs_[leg].written;
  auto slot = pending_.try_emplace(tag).first;
  if (slot->second.primary) {
    compare(leg, *slot->second.primary, half);
    slot->second.done[leg] = true;
  } else {
    slot->second.mirrors[leg] = std::move(half);
  }
  settle(slot);
  bound();
}

void Pairing::on_dropped(Leg which, std::uint64_t tag, DropReason why) {
  auto leg = leg_index(which);
  std::lock_guard lock(mutex_);
  ++legs_[leg].dropped;
  ++(why == DropReason::queue_full ? legs_[leg].dropped_queue_full : legs_[leg].dropped_at_stop);
  auto slot = pending_.try_emplace(tag).first;
  slot->second.done[leg] = true;
  settle(slot);
  bound();
}

std::uint64_t Pairing::candidate_pairs() const {
  std::lock_guard lock(mutex_);
  return legs_[1].pairs;
}

Verdict Pairing::snapshot() const {
  Verdict verdict;
  {
    std::lock_guard lock(mutex_);
    verdict.legs = legs_;
    verdict.primary_written = primary_written_;
  }
  const auto& control = verdict.legs[0];
  const auto& candidate = verdict.legs[1];
  if (control.enabled) verdict.control_rate = metrics::wilson_interval(control.differing, control.pairs);
  verdict.candidate_rate = metrics::wilson_interval(candidate.differing, candidate.pairs);
  verdict.excess_against_control = control.enabled;
  verdict.excess = control.enabled
                       ? metrics::newcombe_difference(candidate.differing, candidate.pairs,
                                                      control.differing, control.pairs)
                       : verdict.candidate_rate;
  for (std::size_t leg = 0; leg < 2; ++leg) {
    verdict.ttft_delta[leg] = percentiles_of(verdict.legs[leg].ttft_delta_ms);
    verdict.itl_delta[leg] = percentiles_of(verdict.legs[leg].itl_delta_ms);
    verdict.legs[leg].ttft_delta_ms.clear();
    verdict.legs[leg].itl_delta_ms.clear();
  }
  return verdict;
}

}  // namespace retrace::shadow
