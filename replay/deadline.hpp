// Internal to replay/: the two limits on an exchange in flight and the one timer that keeps both.
// --timeout is an idle limit (connecting, the first byte, or the next one: no progress for that
// long); --request-deadline, off by default, a limit on the whole exchange from its send. The
// error message names the one that fired, so a long generation cut by a deadline is not taken for
// a server that stopped answering.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "net/connection.hpp"
#include "net/errors.hpp"
#include "replay/replay.hpp"

namespace retrace::replay {

// Which limit gave an exchange up: --timeout (no progress for that long) or --request-deadline.
enum class Expiry : std::uint8_t { none, idle, deadline };

// The exchange's one timer, for both limits, and the connection it would close (null between
// attempts and while connecting, which has its own timeout). Not re-armed on every read (a
// timer-queue insert, a cancel and a handler run per token): a read only stamps `progress`, and
// the timer, when it fires, sleeps again until the idle limit counted from the last stamp.
// Shared with the timer's handler, which may run after the exchange has moved on. Real time,
// whatever the run's clock.
struct Watchdog {
  using WaitClock = std::chrono::steady_clock;
  Watchdog(boost::asio::io_context& io, WaitClock::duration idle_limit,
           std::optional<WaitClock::time_point> deadline_at)
      : timer(io), progress(WaitClock::now()), idle(idle_limit), deadline(deadline_at) {}

  // The limit that is past at `now`, if any (the deadline first: it is the one asked for).
  Expiry past(WaitClock::time_point now) const {
    if (deadline && now >= *deadline) return Expiry::deadline;
    return now - progress >= idle ? Expiry::idle : Expiry::none;
  }
  WaitClock::time_point next_check() const {
    auto at = progress + idle;
    return deadline ? std::min(at, *deadline) : at;
  }

  boost::asio::steady_timer timer;
  net::UpstreamConnection* connection = nullptr;
  WaitClock::time_point progress;  // the last byte received, or the connection's start
  WaitClock::duration idle;
  std::optional<WaitClock::time_point> deadline;
  Expiry expired = Expiry::none;
  bool done = false;  // the exchange is over: the handler neither closes nor re-arms
};

// Arms the watchdog's timer for its next check; the handler closes the connection when a limit
// is past, or arms it again.
void watch(const std::shared_ptr<Watchdog>& watchdog);

// The error message of an exchange given up by `expired` (not none) in `phase`.
std::string expiry_message(Expiry expired, net::Phase phase, const Options& options,
                           const std::string& upstream);

}  // namespace retrace::replay
