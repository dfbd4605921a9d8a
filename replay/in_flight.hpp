// The client's requests in flight, for every exchange's Exchange::in_flight_at_send and
// in_flight_max (format 1.5): how loaded the server was by this client when a request went out,
// and the most it was while the request ran, each counting the request itself.
//
// The count only rises at a send, so the most while a request ran is the most any send during
// its life left: the suffix maximum of the counts sends left, from its own send on. That is kept
// as a stack of (send number, count) with strictly falling counts (a new send pops the entries
// it equals or passes): the entry for a request's send number is found by binary search, and the
// stack never holds more entries than the most in flight at once. One mutex, held for O(log n).
#pragma once

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <vector>

namespace retrace::replay {

class InFlight {
 public:
  struct Sent {
    std::uint64_t number = 0;  // this send's place among the run's sends
    std::int32_t count = 0;    // in flight now, this one included
  };
  Sent sent() {
    std::lock_guard lock(mutex_);
    Sent now{next_++, ++count_};
    while (!peaks_.empty() && peaks_.back().count <= now.count) peaks_.pop_back();
    peaks_.push_back(now);
    return now;
  }
  // The request sent as `sent` ended: the most in flight at once while it ran.
  std::int32_t ended(const Sent& sent) {
    std::lock_guard lock(mutex_);
    --count_;
    auto at = std::lower_bound(peaks_.begin(), peaks_.end(), sent.number,
                               [](const Sent& peak, std::uint64_t number) { return peak.number < number; });
    return at == peaks_.end() ? sent.count : std::max(sent.count, at->count);
  }
  std::int32_t now() {
    std::lock_guard lock(mutex_);
    return count_;
  }

 private:
  std::mutex mutex_;
  std::uint64_t next_ = 0;
  std::int32_t count_ = 0;
  std::vector<Sent> peaks_;  // send numbers rising, counts strictly falling
};

}  // namespace retrace::replay
