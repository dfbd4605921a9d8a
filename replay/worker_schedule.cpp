// The Worker's schedules on its io_context (replay/worker.hpp): closed-loop slots, the open-loop
// launcher, and the chains of exchanges (a session's turns) they run; the wait for the writer and
// for a send time. Each exchange's steps are worker.cpp.
#include "replay/worker.hpp"

#include "replay/feed.hpp"

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <exception>

namespace retrace::replay {

namespace asio = boost::asio;

// Waits, in short slices, while the writer holds more decoded exchanges than kHeldBytes (or
// until the run stops), then counts `decoding` as held. During warmup nothing is written, and
// nothing waits.
asio::awaitable<std::size_t> Worker::wait_for_writer(std::size_t decoding) {
  if (!shared_.queue || !shared_.record) co_return 0;
  asio::steady_timer timer(io_);
  while (!stopping_) {
    if (shared_.queue->reserve(decoding)) co_return decoding;
    timer.expires_after(std::chrono::milliseconds(1));
    co_await timer.async_wait(kTuple);
  }
  co_return 0;
}

// Sleeps until `offset_ns` after the run's start, in short slices so that a stop is seen.
// Returns false when stopping.
asio::awaitable<bool> Worker::wait_until(std::int64_t offset_ns) {
  asio::steady_timer timer(io_);
  auto deadline = shared_.run_start + std::chrono::nanoseconds(offset_ns);
  while (!stopping_) {
    auto now = shared_.clock.now();
    if (now >= deadline) co_return true;
    timer.expires_after(std::min<std::chrono::steady_clock::duration>(deadline - now, std::chrono::milliseconds(50)));
    co_await timer.async_wait(kTuple);
  }
  co_return false;
}

bool Worker::past_duration(std::int64_t intended_ns) const {
  const auto& duration = shared_.options.duration;
  if (!duration || !shared_.record) return false;
  auto elapsed = nanoseconds(shared_.clock.now() - shared_.run_start);
  return std::max(intended_ns, elapsed) >= duration->count();
}

asio::awaitable<std::optional<Work>> Worker::next_work() {
  if (shared_.feed) {
    auto fed = co_await shared_.feed->next();
    if (!fed) co_return std::nullopt;
    co_return Work{nullptr, std::move(fed->send), fed->start_ns, std::move(fed->chain)};
  }
  auto index = shared_.next_chain.fetch_add(1);
  if (index >= shared_.chains->size()) co_return std::nullopt;
  const auto& chain = (*shared_.chains)[index];
  co_return Work{&chain, {}, chain.start_ns, nullptr};
}

// What a slot or launcher coroutine ends with. An exception out of one (none is expected:
// run_exchange records its own) is said on stderr, never dropped as asio::detached would drop
// it: the run goes on with the other slots, one fewer.
void Worker::spawn(asio::awaitable<void> work, const char* what) {
  asio::co_spawn(io_, std::move(work), [what](std::exception_ptr thrown) {
    if (!thrown) return;
    try {
      std::rethrow_exception(thrown);
    } catch (const std::exception& e) {
      report_internal_error(std::string(what) + " ended", e.what());
    } catch (...) {
      report_internal_error(std::string(what) + " ended", "an exception that is not a std::exception");
    }
  });
}

void Worker::start_closed_slot() { spawn(run_closed_slot(), "a closed-loop slot"); }
void Worker::start_launcher() { spawn(run_launcher(), "an open-loop launcher"); }

asio::awaitable<void> Worker::run_closed_slot() {
  while (!stopping_ && !past_duration(0)) {
    auto work = co_await next_work();
    if (!work || stopping_) break;
    co_await run_chain(std::move(*work), true);
  }
}

// Each chain is spawned on its own; it loses nothing, since run_exchange records its own failures.
asio::awaitable<void> Worker::run_launcher() {
  while (!stopping_) {
    auto work = co_await next_work();
    if (!work || past_duration(work->start_ns)) break;
    if (!co_await wait_until(work->start_ns)) break;
    spawn(run_chain(std::move(*work), false), "a request chain");
  }
}

asio::awaitable<void> Worker::run_chain(Work work, bool closed_loop) {
  std::vector<std::optional<SessionAnswer>> answers;
  bool live = shared_.options.live_sessions && shared_.record;
  for (std::size_t k = 0; k < work.size() && !stopping_; ++k) {
    std::int64_t intended;
    if (closed_loop) {
      intended = nanoseconds(shared_.clock.now() - shared_.run_start);  // the slot (or turn) just freed
    } else if (shared_.kind == ScheduleKind::recorded) {
      intended = work.offset_ns(k);
      if (past_duration(intended) || !co_await wait_until(intended)) break;
    } else {
      intended = k == 0 ? work.start_ns : nanoseconds(shared_.clock.now() - shared_.run_start);
    }
    if (past_duration(intended)) break;
    const Prepared& send = work.turn(k, shared_.prepared);
    auto answer = co_await run_exchange(send, intended, live ? &answers : nullptr);
    if (live) answers.push_back(std::move(answer));
  }
}

}  // namespace retrace::replay
