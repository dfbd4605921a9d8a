// SIGINT and SIGTERM as requests to stop: the one implementation every command uses (replay,
// sweep, bisect, demo, serve and record). A shell starts background jobs with SIGINT ignored;
// watching replaces the inherited SIG_IGN, so `retrace sweep ... &` stops on `kill -INT` too.
//
// A signal handler only writes the signal's number into a pipe; a thread of its own reads it and
// calls back, so the callback may do anything, whatever the command's threads are doing, and no
// thread needs a signal mask (threads started before the watcher are covered too).
//
// Two shapes:
// - StopOnSignals: the rule for commands that stop in one stage (replay, sweep, bisect, demo,
//   serve): the first signal asks to stop (a flag, or a callback), any later one exits 130 at once,
//   because the user means it.
// - StopSignals: for a command that stops in stages (record drains, then cuts): every signal
//   reaches the callback until quit_on_next(), after which the next one ends the process at once
//   (the signals' default action).
//
// Only one watcher may exist at a time (signal handlers are process-wide).
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>

namespace retrace {

class StopSignals {
 public:
  // Watches SIGINT and SIGTERM from now on. `on_signal(signal_number)` runs on the watcher
  // thread for each one: hand it to your own thread and return.
  // With `hangup`, SIGHUP reaches on_signal too (record's segments rotate on it, as logrotate
  // expects), before and after quit_on_next() alike: it never ends the process.
  explicit StopSignals(std::function<void(int signal_number)> on_signal, bool hangup = false);
  // Stops watching: SIGINT and SIGTERM have their default action again.
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // From when this returns, SIGINT and SIGTERM end the process at once; on_signal is not called
  // again. Any thread, on_signal included.
  void quit_on_next();

 private:
  struct Watcher;
  std::unique_ptr<Watcher> watcher_;
};

// The first SIGINT/SIGTERM sets `stop` (or calls `on_first`, on the watcher thread) and prints
// `note` on stderr when not empty; the second exits 130 at once.
class StopOnSignals {
 public:
  explicit StopOnSignals(std::atomic<bool>& stop, std::string note = {});
  explicit StopOnSignals(std::function<void()> on_first, std::string note = {});
  StopOnSignals(const StopOnSignals&) = delete;
  StopOnSignals& operator=(const StopOnSignals&) = delete;

 private:
  std::atomic<bool> asked_{false};
  StopSignals signals_;
};

// What a second Ctrl-C exits with (128 + SIGINT, as a shell reports a process it ended).
inline constexpr int kExitSecondSignal = 130;

namespace net {
using retrace::StopOnSignals;  // the names record/ and tests knew
using retrace::StopSignals;
}  // namespace net

}  // namespace retrace
