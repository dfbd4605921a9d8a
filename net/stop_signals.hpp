// SIGINT and SIGTERM as requests to stop, for a command that stops in stages: record drains, then
// cuts; replay cuts. The user's way out when a gentle stop takes too long is one more Ctrl-C, so
// once the command has nothing gentler left to do it calls quit_on_next(), and the next signal
// ends the process at once (the signals' default action).
//
// A thread of its own waits for the signals (an io_context and an asio::signal_set), so a signal
// is heard whatever the command's threads are doing, and no thread needs a signal mask. Asio's
// handler replaces an inherited SIG_IGN too: a shell starts background jobs with SIGINT ignored.
#pragma once

#include <functional>
#include <memory>

namespace retrace::net {

class StopSignals {
 public:
  // Watches SIGINT and SIGTERM from now on. `on_signal(signal_number)` runs on the watcher
  // thread for each one: hand it to your own thread and return.
  explicit StopSignals(std::function<void(int signal_number)> on_signal);
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

}  // namespace retrace::net
