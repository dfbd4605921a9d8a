// What a listener does when accept() fails: out of file descriptors (EMFILE) an acceptor that
// retries at once fails again at once, spinning a core and writing a log line each time. The
// backoff pauses accepting (5 ms, doubling to 1 s) while the failures last, logs the first failure
// of a streak and, once an accept succeeds again, how many there were. Connections that arrive
// meanwhile wait in the listen backlog.
//
// Threading: one per acceptor, used on the thread (or strand) that runs the acceptor's handlers.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <ostream>
#include <string>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/system/error_code.hpp>

namespace retrace::net {

class AcceptBackoff {
 public:
  // `who` prefixes each log line ("retrace serve").
  AcceptBackoff(boost::asio::any_io_executor executor, std::string who, std::ostream& log);

  // After a failed accept (not operation_aborted): calls `accept_again` after the pause.
  void failed(const boost::system::error_code& ec, std::function<void()> accept_again);
  // After a successful accept: ends a streak of failures, saying how many there were.
  void succeeded();
  // Stops a pending pause; its accept_again is not called.
  void cancel();

  std::uint64_t failures() const { return total_failures_; }

 private:
  boost::asio::steady_timer timer_;
  std::string who_;
  std::ostream& log_;
  std::chrono::milliseconds pause_{0};
  std::uint64_t streak_ = 0;
  std::uint64_t total_failures_ = 0;
};

}  // namespace retrace::net
