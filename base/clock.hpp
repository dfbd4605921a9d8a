// The clock every stage reads the time from. STYLE rule 7: the clock is passed in, not called as a
// global, so a test can run a stage on a clock it moves by hand and check the times it records
// exactly. Waiting (Asio timers, condition variables) still runs on real time; what a stage
// *measures and writes* (send offsets, TTFT, end times, header dates) comes from here.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace retrace {

class Clock {
 public:
  using time_point = std::chrono::steady_clock::time_point;
  using wall_time_point = std::chrono::system_clock::time_point;

  virtual ~Clock() = default;
  // Monotonic time, for durations and offsets.
  virtual time_point now() const = 0;
  // Calendar time, for what a reader sees as a date (a trace header's `created`).
  virtual wall_time_point wall() const = 0;

  // The process's own clocks (std::chrono::steady_clock and system_clock); lives for the program.
  static const Clock& system();
};

// A clock that moves only when told to, and optionally by `step` on every read, so that successive
// events get distinct, predictable times. Safe to read and move from several threads.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(std::chrono::nanoseconds step = std::chrono::nanoseconds{0},
                       wall_time_point wall_origin = wall_time_point{})
      : step_ns_(step.count()), wall_origin_(wall_origin) {}

  time_point now() const override {
    return time_point{std::chrono::nanoseconds{ns_.fetch_add(step_ns_) }};
  }
  wall_time_point wall() const override {
    return wall_origin_ + std::chrono::duration_cast<wall_time_point::duration>(
                              std::chrono::nanoseconds{ns_.load()});
  }
  void advance(std::chrono::nanoseconds by) { ns_.fetch_add(by.count()); }

 private:
  mutable std::atomic<std::int64_t> ns_{0};
  std::int64_t step_ns_;
  wall_time_point wall_origin_;
};

namespace detail {
class SystemClock final : public Clock {
 public:
  time_point now() const override { return std::chrono::steady_clock::now(); }
  wall_time_point wall() const override { return std::chrono::system_clock::now(); }
};
}  // namespace detail

inline const Clock& Clock::system() {
  static const detail::SystemClock clock;
  return clock;
}

}  // namespace retrace
