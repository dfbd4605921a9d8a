#include "net/stop_signals.hpp"

#include <pthread.h>

#include <csignal>
#include <future>
#include <thread>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>

namespace retrace::net {

namespace asio = boost::asio;
using error_code = boost::system::error_code;

struct StopSignals::Watcher {
  explicit Watcher(std::function<void(int)> handler) : on_signal(std::move(handler)) {}

  void do_wait() {
    signals.async_wait([this](error_code ec, int number) { on_wait(ec, number); });
  }

  void on_wait(error_code ec, int number) {
    if (ec || quitting) return;  // cancelled, or a signal that raced quit_on_next()
    on_signal(number);
    if (!quitting) do_wait();
  }

  // Removing the last registration of a signal gives it back its default action (asio's
  // signal_set_service), which is what makes the next one end the process.
  void quit() {
    quitting = true;
    error_code ignored;
    signals.clear(ignored);
    signals.cancel(ignored);
  }

  std::function<void(int)> on_signal;
  bool quitting = false;  // watcher thread only
  // Order matters: the io_context outlives the signal_set, whose destructor runs after the thread
  // is joined (in ~StopSignals) and restores the default actions.
  asio::io_context io{1};
  // Keeps run() going after quit() (until ~StopSignals), so a later quit_on_next() still returns.
  asio::executor_work_guard<asio::io_context::executor_type> work{io.get_executor()};
  asio::signal_set signals{io, SIGINT, SIGTERM};
  std::thread thread;
};

StopSignals::StopSignals(std::function<void(int)> on_signal)
    : watcher_(std::make_unique<Watcher>(std::move(on_signal))) {
  watcher_->do_wait();
  watcher_->thread = std::thread([watcher = watcher_.get()] {
    ::pthread_setname_np(::pthread_self(), "rt-signals");
    watcher->io.run();
  });
}

StopSignals::~StopSignals() {
  watcher_->io.stop();
  watcher_->thread.join();
}

void StopSignals::quit_on_next() {
  auto& watcher = *watcher_;
  if (watcher.io.get_executor().running_in_this_thread()) return watcher.quit();
  // Wait until the watcher thread has done it, so that "from when this returns" holds.
  std::promise<void> done;
  asio::post(watcher.io, [&] {
    watcher.quit();
    done.set_value();
  });
  done.get_future().wait();
}

}  // namespace retrace::net
