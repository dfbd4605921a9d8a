// Internal to replay/ (engine.cpp only): what a run sends, behind one interface: a loaded trace's
// plan (its requests prepared before the run), or a streamed input's feed (replay/feed.hpp), read
// in order or by its plan (replay/planner.hpp) as the run goes.
#pragma once

#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "replay/feed.hpp"
#include "replay/preflight.hpp"
#include "replay/prepare.hpp"
#include "replay/shard.hpp"
#include "replay/worker.hpp"

namespace retrace::replay {

// What a run sends: a loaded trace's plan, or a streamed input's feed (replay/feed.hpp).
class RunInput {
 public:
  virtual ~RunInput() = default;
  virtual std::size_t count() const = 0;  // requests the measured run sends
  virtual std::size_t rejected() const = 0;
  virtual metrics::TraceIdentity identity() const = 0;
  // Sets `shared` up for a phase: `warmup` requests (closed loop), or the measured run.
  virtual void begin(Shared& shared, std::optional<std::size_t> warmup) = 0;
  // After the phase: what went wrong with the input during it (a streamed input that changed).
  virtual std::exception_ptr end(Shared& shared) = 0;
};

class LoadedRun final : public RunInput {
 public:
  LoadedRun(const LoadedTrace& input, const Options& options, const Preflight& checked)
      : input_(input) {
    auto chosen = select_exchanges(input.exchanges, options, options.sessions || options.live_sessions);
    prepared_ = prepare_requests(input, chosen, options, checked);
    chains_ = make_chains(input, prepared_, options);
  }
  std::size_t count() const override { return prepared_.size(); }
  std::size_t rejected() const override { return rejected_by_record(input_.exchanges); }
  metrics::TraceIdentity identity() const override { return input_identity(input_); }
  void begin(Shared& shared, std::optional<std::size_t> warmup) override {
    shared.prepared = &prepared_;
    shared.chains = &chains_;
    if (!warmup) return;
    warm_.clear();
    for (std::size_t i = 0; i < *warmup; ++i)  // the first N chosen requests, cycling
      warm_.emplace_back().items.push_back(i % prepared_.size());
    shared.chains = &warm_;
  }
  std::exception_ptr end(Shared& shared) override {
    shared.chains = nullptr;
    shared.prepared = nullptr;
    warm_ = {};
    return nullptr;
  }

 private:
  const LoadedTrace& input_;
  std::vector<Prepared> prepared_;
  std::vector<Chain> chains_, warm_;
};

class StreamedRun final : public RunInput {
 public:
  StreamedRun(const StreamedInput& input, const Options& options, const Preflight& checked)
      : input_(input), options_(options), prepare_(options, checked) {
    // What a loaded run finds when it prepares every request before the traffic: a --set or
    // --unset that cannot apply. (Without them, preparing cannot fail: the scan checked methods.)
    if (options.set.empty() && options.unset.empty()) return;
    TraceReader reader(input.path);
    Exchange exchange;
    if (input.plan) {
      for (const auto& send : input.plan->sends) {
        if (send.cycle > 0) continue;
        reader.read_request_at(input.plan->at[send.input_index], exchange);
        prepare_(exchange);
      }
      return;
    }
    Selection selection(options, false);
    while (!selection.full() && reader.next_request(exchange))
      if (selection.take(exchange)) prepare_(exchange);
  }
  std::size_t count() const override { return input_.count(options_); }
  std::size_t rejected() const override { return input_.facts.rejected; }
  metrics::TraceIdentity identity() const override { return input_.identity; }
  void begin(Shared& shared, std::optional<std::size_t> warmup) override {
    if (input_.plan) {
      warm_ = warmup ? input_.plan->warmup(*warmup) : std::vector<Chain>{};
      feed_ = std::make_unique<Feed>(input_, options_, prepare_, warmup ? warm_ : input_.plan->chains);
    } else {
      bool open_loop = !warmup && options_.schedule.kind == ScheduleKind::rate;
      feed_ = std::make_unique<Feed>(input_, options_, prepare_, warmup.value_or(count()), open_loop);
    }
    shared.feed = feed_.get();
  }
  std::exception_ptr end(Shared& shared) override {
    auto failure = feed_->finish();
    shared.feed = nullptr;
    feed_.reset();
    return failure;
  }

 private:
  const StreamedInput& input_;
  const Options& options_;
  Preparer prepare_;
  std::vector<Chain> warm_;  // a planned run's warmup chains, while they are fed
  std::unique_ptr<Feed> feed_;
};

}  // namespace retrace::replay
