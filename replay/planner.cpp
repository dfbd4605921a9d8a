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
  auto chosen = select_candidates(plan.candidates, options_, by_session);
  std::vector<std::size_t> copies(plan.candidates.size());  // sends of each input so far
  plan.sends.reserve(chosen.size());
  for (auto index : chosen) {
    if (auto refused = refused_.find(index); refused != refused_.end())
      throw std::invalid_argument(refused->second);
    if (copies[index] == 0) ++plan.selected;
    plan.sends.push_back({index, copies[index]++, nullptr});
    if (model_of_[index] != 0) models.insert(models_[model_of_[index] - 1]);
  }
  plan.chains = make_chains(plan.candidates, plan.sends, options_);
  return std::move(plan_);
}

}  // namespace retrace::replay
