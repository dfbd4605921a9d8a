// A replay that reads its input as it sends it: see replay/feed.hpp.
#include "replay/feed.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <vector>

#include "base/time.hpp"
#include "replay/shard.hpp"

// GCC 12 inlines a coroutine frame's allocation (Asio's aligned_alloc) but not its deallocation,
// and -Wmismatched-new-delete then sees a mismatch that is not one (as in replay/worker.cpp).
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

namespace retrace::replay {

namespace asio = boost::asio;

bool can_stream(const Options& options) {
  return !options.sessions && !options.live_sessions &&
         options.schedule.kind != ScheduleKind::recorded && !options.window_from && !options.window_to;
}

std::size_t StreamedInput::count(const Options& options) const {
  if (plan) return plan->sends.size();
  return selected == 0 ? 0 : options.requests.value_or(selected);
}

StreamedInput scan_input(const std::string& path, const Options& options, std::ostream& warnings,
                         std::string_view prefix) {
  Selection selection(options, false);  // a bad filter or trace control fails before the read
  TraceReader reader(path);
  StreamedInput input;
  input.path = path;
  input.header = reader.header();
  // A sharded run records the identity of the whole trace; other runs stop reading once --limit
  // requests are chosen, as load_input does. A planned run reads what load_input would read.
  bool whole = options.shard_count > 1 || options.start_at_unix_ns.has_value();
  std::optional<Planner> planner;
  std::function<bool(const Exchange&)> enough;
  if (!can_stream(options)) {
    planner.emplace(options);
    enough = enough_input(options);
  }
  InputIdentity identity;
  ModelReader model_of;
  Exchange exchange;
  if (planner && planner->windowed()) {  // the whole trace's clock and sessions, before planning
    TraceReader first_pass(path);
    while (first_pass.next_request(exchange)) planner->learn(exchange);
  }
  bool more = true;
  while (more && (whole || planner || !selection.full()) && reader.next_request(exchange)) {
    ++input.exchanges;
    if (exchange.error.kind == ErrorKind::rejected) ++input.facts.rejected;
    identity.add(exchange);
    if (planner) {
      if (planner->windowed() && !planner->in_window(exchange)) planner->leave_out(exchange);
      else planner->add(exchange, reader.position(), model_of(exchange));
      more = !enough || !enough(exchange);
      continue;
    }
    if (!selection.take(exchange)) continue;
    method_of(exchange);  // what preparing it during the run could refuse, refused now
    if (auto model = model_of(exchange)) input.facts.models.insert(*model);
  }
  input.identity = identity.identity(input.header.created_unix_ns);
  check_readable(path, reader.recovery(), input.exchanges, warnings, prefix);
  if (planner) {
    input.plan = std::move(*planner).finish(input.facts.models);
    input.selected = input.plan->selected;
    return input;
  }
  selection.check_filters_matched();
  input.selected = selection.taken();
  // The arrivals the run will draw, as check_schedule lays them out for a loaded run: a rate too
  // low for them fails here, before any traffic.
  // Past a million arrivals whose mean span is under a tenth of the bound, their sum cannot reach
  // it (its spread shrinks with the count), and --requests 4000000000 would draw for a minute.
  if (options.schedule.kind == ScheduleKind::rate && input.count(options) > 0) {
    Arrivals arrivals(options.schedule, options.seed);
    auto needed = options.shard_index + (input.count(options) - 1) * options.shard_count + 1;
    double mean_span_s = static_cast<double>(needed) / options.schedule.rate;
    bool far_below = needed > (1u << 20) &&
                     mean_span_s < std::chrono::duration<double>(kMaxScheduleSpan).count() / 10;
    for (std::size_t i = 0; i < needed && !far_below; ++i) arrivals.next();
  }
  return input;
}

Feed::Feed(const StreamedInput& input, const Options& options, const Preparer& prepare,
           std::size_t count, bool open_loop)
    : input_(input), options_(options), prepare_(prepare), count_(count), open_loop_(open_loop),
      thread_([this] { produce(); }) {}

Feed::Feed(const StreamedInput& input, const Options& options, const Preparer& prepare,
           const std::vector<Chain>& chains)
    : input_(input), options_(options), prepare_(prepare), count_(0), open_loop_(false),
      chains_(&chains), thread_([this] { produce(); }) {}

std::exception_ptr Feed::finish() {
  stop();
  if (thread_.joinable()) thread_.join();
  return failure_;
}

void Feed::stop() {
  std::lock_guard lock(mutex_);
  end(true);
}

std::size_t Feed::ready() const {
  std::lock_guard lock(mutex_);
  return ready_requests_;
}

void Feed::end(bool stopped) {
  ended_ = true;
  if (stopped) {
    stopped_ = true;
    ready_.clear();
    ready_requests_ = 0;
    room_.notify_all();
  }
  wake(SIZE_MAX);
}

void Feed::wake(std::size_t count) {
  for (; count > 0 && !waiting_.empty(); --count) {
    auto* timer = waiting_.front();
    waiting_.pop_front();
    // On the taker's own thread: a timer is not safe to touch from this one. The taker resumes
    // only through this cancel, so the timer is there when it runs.
    asio::post(timer->get_executor(), [timer] { timer->cancel(); });
  }
}

asio::awaitable<std::optional<FedRequest>> Feed::next() {
  while (true) {
    std::optional<asio::steady_timer> woken;  // made only to wait: not per request taken
    {
      std::lock_guard lock(mutex_);
      if (!ready_.empty()) {
        auto request = std::move(ready_.front());
        ready_.pop_front();
        ready_requests_ -= request.size();
        if (reader_waiting_ && ready_requests_ <= kFeedAhead / 2) {
          reader_waiting_ = false;
          room_.notify_one();
        }
        co_return request;
      }
      if (ended_) co_return std::nullopt;
    }
    woken.emplace(co_await asio::this_coro::executor, asio::steady_timer::time_point::max());
    {
      std::lock_guard lock(mutex_);
      // Ready or ended since the look above: take it (or end) on the next turn, without waiting.
      if (!ready_.empty() || ended_) continue;
      waiting_.push_back(&*woken);
    }
    co_await woken->async_wait(asio::as_tuple(asio::use_awaitable));
  }
}

bool Feed::push(FedRequest request) {
  std::unique_lock lock(mutex_);
  if (ready_requests_ >= kFeedAhead && !stopped_) {
    reader_waiting_ = true;
    room_.wait(lock, [&] { return stopped_ || !reader_waiting_; });
  }
  if (stopped_) return false;
  ready_requests_ += request.size();
  ready_.push_back(std::move(request));
  wake(1);
  return true;
}

void Feed::produce() {
  try {
    if (chains_) produce_planned();
    else produce_in_order();
  } catch (...) {
    failure_ = std::current_exception();
  }
  std::lock_guard lock(mutex_);
  end(false);
}

void Feed::produce_planned() {
  const Plan& plan = *input_.plan;
  TraceReader reader(input_.path);
  Exchange exchange;
  for (const auto& chain : *chains_) {
    auto fed = std::make_shared<FedChain>();
    fed->turns.reserve(chain.items.size());
    for (auto item : chain.items) {
      const auto& send = plan.sends[item];
      reader.read_request_at(plan.at[send.input_index], exchange);
      fed->turns.push_back({send.input_index, send.cycle, prepare_(exchange)});
    }
    fed->offsets_ns = chain.offsets_ns;
    if (!push({{}, chain.start_ns, std::move(fed)})) return;
  }
}

void Feed::produce_in_order() {
  // Shard I of N takes arrivals I, I + N, I + 2N, ... of the whole run's process.
  std::optional<Arrivals> arrivals;
  if (open_loop_) {
    arrivals.emplace(options_.schedule, options_.seed);
    for (std::size_t i = 0; i < options_.shard_index; ++i) arrivals->next();
  }
  auto start = [&]() -> std::int64_t {
    if (!arrivals) return 0;
    auto at = arrivals->next();
    for (std::size_t i = 1; i < options_.shard_count; ++i) arrivals->next();
    return at;
  };
  // --requests over a small selection: the first cycle's requests are kept and sent again.
  bool keep = count_ > input_.selected && input_.selected <= kCycleKept;
  std::vector<Prepared> kept;
  std::size_t sent = 0;
  for (std::size_t cycle = 0; sent < count_; ++cycle) {
    if (cycle > 0 && keep) {
      for (std::size_t i = 0; i < kept.size() && sent < count_; ++i, ++sent)
        if (!push({{kept[i].input_index, cycle, kept[i].request}, start(), nullptr})) return;
      continue;
    }
    TraceReader reader(input_.path);
    Selection selection(options_, false);
    Exchange exchange;
    std::size_t position = 0;
    while (sent < count_ && !selection.full() && reader.next_request(exchange)) {
      auto index = position++;
      if (!selection.take(exchange)) continue;
      Prepared prepared{index, cycle, prepare_(exchange)};
      if (keep) kept.push_back(prepared);
      if (!push({std::move(prepared), start(), nullptr})) return;
      ++sent;
    }
    if (sent < count_ && selection.taken() != input_.selected)
      throw TraceError(input_.path + " changed while it was replayed: " +
                       std::to_string(selection.taken()) + " requests were chosen from it on this "
                       "reading, " + std::to_string(input_.selected) + " before the run; " +
                       std::to_string(sent) + " of " + std::to_string(count_) + " were sent");
  }
}

}  // namespace retrace::replay
