// A run planned from one streamed pass: see replay/planner.hpp.
#include "replay/planner.hpp"

#include <algorithm>
#include <stdexcept>

namespace retrace::replay {

std::vector<Chain> Plan::warmup(std::size_t count) const {
  std::vector<Chain> chains;
  if (sends.empty()) return chains;
  chains.reserve(count);
  for (std::size_t i = 0; i < count; ++i) chains.emplace_back().items.push_back(i % sends.size());
  return chains;
}

void Planner::learn(const Exchange& exchange) {
  Candidate candidate;
  candidate.actual_send_ns = exchange.actual_send_ns;
  candidate.start_unix_ns = exchange.start_unix_ns;
  left_out_.clock.add(candidate);
  if (exchange.session_id.empty()) return;
  auto [it, inserted] = session_first_.try_emplace(exchange.session_id, exchange.actual_send_ns,
                                                   exchange.start_unix_ns);
  if (inserted) return;
  it->second.first = std::min(it->second.first, exchange.actual_send_ns);
  it->second.second = std::min(it->second.second, exchange.start_unix_ns);
}

// select_candidates' rule (replay/select.cpp): a session by its first turn's offset.
bool Planner::in_window(const Exchange& exchange) const {
  std::int64_t at = left_out_.clock.offset(exchange.actual_send_ns, exchange.start_unix_ns);
  if (!exchange.session_id.empty()) {
    auto first = session_first_.find(exchange.session_id);
    // Absent only when the input changed between the passes: the exchange's own offset then.
    if (first != session_first_.end()) at = left_out_.clock.offset(first->second.first, first->second.second);
  }
  if (options_.window_from && at < options_.window_from->count()) return false;
  if (options_.window_to && at >= options_.window_to->count()) return false;
  return true;
}

void Planner::leave_out(const Exchange& exchange) {
  ++left_out_.exchanges;
  if (candidate_of(exchange, options_).eligible) ++left_out_.matched;
}

void Planner::add(const Exchange& exchange, RecordPosition at, const std::optional<std::string>& model) {
  auto candidate = candidate_of(exchange, options_);
  if (!candidate.session.empty())
    candidate.session = *plan_->session_ids.insert(exchange.session_id).first;
  try {
    method_of(exchange);  // what preparing it during the run could refuse, refused before it
  } catch (const std::invalid_argument& e) {
    refused_.emplace(plan_->candidates.size(), e.what());
  }
  plan_->candidates.push_back(candidate);
  plan_->at.push_back(at);
  std::uint32_t model_index = 0;
  if (model) {
    auto known = std::find(models_.begin(), models_.end(), *model);
    if (known == models_.end()) known = models_.insert(models_.end(), *model);
    model_index = static_cast<std::uint32_t>(known - models_.begin()) + 1;
  }
  model_of_.push_back(model_index);
}

std::shared_ptr<const Plan> Planner::finish(std::set<std::string>& models) && {
  Plan& plan = *plan_;
  bool by_session = options_.sessions || options_.live_sessions;
  if (windowed()) {
    plan.left_out = std::move(left_out_);
    session_first_ = {};
  }
  const LeftOut* left_out = plan.left_out ? &*plan.left_out : nullptr;
  auto chosen = select_candidates(plan.candidates, options_, by_session, left_out);
  std::vector<std::size_t> copies(plan.candidates.size());  // sends of each input so far
  plan.sends.reserve(chosen.size());
  for (auto index : chosen) {
    if (auto refused = refused_.find(index); refused != refused_.end())
      throw std::invalid_argument(refused->second);
    if (copies[index] == 0) ++plan.selected;
    plan.sends.push_back({index, copies[index]++, nullptr});
    if (model_of_[index] != 0) models.insert(models_[model_of_[index] - 1]);
  }
  plan.chains = make_chains(plan.candidates, plan.sends, options_, left_out);
  return std::move(plan_);
}

}  // namespace retrace::replay
