// See replay/deadline.hpp.
#include "replay/deadline.hpp"

namespace retrace::replay {

void watch(const std::shared_ptr<Watchdog>& watchdog) {
  watchdog->timer.expires_at(watchdog->next_check());
  watchdog->timer.async_wait([watchdog](net::error_code wait_ec) {
    if (wait_ec || watchdog->done) return;
    auto now = Watchdog::WaitClock::now();
    auto expired = watchdog->past(now);
    if (expired == Expiry::deadline || (expired == Expiry::idle && watchdog->connection)) {
      watchdog->expired = expired;
      if (watchdog->connection) watchdog->connection->close();
      return;
    }
    // No connection to watch yet (connecting keeps its own timeout): idle counts from when there is.
    if (!watchdog->connection) watchdog->progress = now;
    watch(watchdog);
  });
}

std::string expiry_message(Expiry expired, net::Phase phase, const Options& options,
                           const std::string& upstream) {
  std::string text =
      expired == Expiry::deadline
          ? "the request was not finished by --request-deadline " +
                format_duration(*options.request_deadline) + " after its send"
          : "upstream sent nothing for --timeout " + format_duration(options.timeout) +
                " (an idle timeout: connecting, the first byte, or the next one)";
  return text + " (" + std::string(net::to_string(phase)) + ", upstream " + upstream + ")";
}

}  // namespace retrace::replay
