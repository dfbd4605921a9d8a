#include "net/accept_backoff.hpp"

#include <algorithm>

#include <boost/asio/error.hpp>

namespace retrace::net {

namespace {
constexpr std::chrono::milliseconds kFirstPause{5};
constexpr std::chrono::milliseconds kLongestPause{1000};
}  // namespace

AcceptBackoff::AcceptBackoff(boost::asio::any_io_executor executor, std::string who, std::ostream& log)
    : timer_(executor), who_(std::move(who)), log_(log) {}

void AcceptBackoff::failed(const boost::system::error_code& ec, std::function<void()> accept_again) {
  ++total_failures_;
  if (streak_++ == 0) {
    log_ << who_ << ": accept failed: " << ec.message()
         << "; pausing new connections until an accept succeeds" << std::endl;
    pause_ = kFirstPause;
  } else {
    pause_ = std::min(pause_ * 2, kLongestPause);
  }
  timer_.expires_after(pause_);
  timer_.async_wait([again = std::move(accept_again)](const boost::system::error_code& wait_ec) {
    if (!wait_ec) again();
  });
}

void AcceptBackoff::succeeded() {
  if (streak_ == 0) return;
  log_ << who_ << ": accepting connections again after " << streak_ << " failed accept"
       << (streak_ == 1 ? "" : "s") << std::endl;
  streak_ = 0;
}

void AcceptBackoff::cancel() { timer_.cancel(); }

}  // namespace retrace::net
