#include "base/stop_signals.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <mutex>
#include <stdexcept>
#include <thread>

namespace retrace {

namespace {

// The handler's only state: where to write. A handler cannot be handed an argument, so this one
// rule needs a global; it is set and cleared by the watcher alone.
std::atomic<int> signal_pipe{-1};

extern "C" void on_stop_signal(int number) {
  const int saved = errno;
  const unsigned char byte = static_cast<unsigned char>(number);
  if (int fd = signal_pipe.load(); fd >= 0) {
    ssize_t ignored = ::write(fd, &byte, 1);  // non-blocking: a full pipe already holds a signal
    (void)ignored;
  }
  errno = saved;
}

void set_action(void (*handler)(int), int only = 0) {
  struct sigaction action {};
  action.sa_handler = handler;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;  // other threads' reads and writes go on undisturbed
  if (only != 0) {
    ::sigaction(only, &action, nullptr);
    return;
  }
  ::sigaction(SIGINT, &action, nullptr);
  ::sigaction(SIGTERM, &action, nullptr);
}

}  // namespace

struct StopSignals::Watcher {
  explicit Watcher(std::function<void(int)> handler) : on_signal(std::move(handler)) {
    if (::pipe2(fds, O_CLOEXEC) != 0)
      throw std::runtime_error(std::string("cannot watch for SIGINT/SIGTERM: pipe: ") + std::strerror(errno));
    ::fcntl(fds[1], F_SETFL, O_NONBLOCK);
  }
  ~Watcher() {
    ::close(fds[0]);
    ::close(fds[1]);
  }

  void run() {
    ::pthread_setname_np(::pthread_self(), "rt-signals");
    while (true) {
      unsigned char byte = 0;
      ssize_t n = ::read(fds[0], &byte, 1);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0 || byte == 0) return;  // 0: ~StopSignals wakes us to end
      std::lock_guard lock(mutex);
      if (!quitting || byte == SIGHUP) on_signal(byte);
    }
  }

  std::function<void(int)> on_signal;
  int fds[2] = {-1, -1};
  std::mutex mutex;  // held while on_signal runs, so quit_on_next() from elsewhere waits for it
  bool quitting = false;
  bool hangup = false;  // SIGHUP watched too
  std::thread thread;
};

StopSignals::StopSignals(std::function<void(int)> on_signal, bool hangup)
    : watcher_(std::make_unique<Watcher>(std::move(on_signal))) {
  watcher_->hangup = hangup;
  watcher_->thread = std::thread([watcher = watcher_.get()] { watcher->run(); });
  signal_pipe.store(watcher_->fds[1]);
  set_action(on_stop_signal);  // replaces an inherited SIG_IGN as well as the default
  if (hangup) set_action(on_stop_signal, SIGHUP);
}

StopSignals::~StopSignals() {
  set_action(SIG_DFL);
  if (watcher_->hangup) set_action(SIG_DFL, SIGHUP);
  signal_pipe.store(-1);
  const unsigned char end = 0;
  while (::write(watcher_->fds[1], &end, 1) < 0 && (errno == EINTR || errno == EAGAIN))
    std::this_thread::yield();  // a full pipe: the watcher is draining it
  watcher_->thread.join();
}

void StopSignals::quit_on_next() {
  auto& watcher = *watcher_;
  if (std::this_thread::get_id() == watcher.thread.get_id()) {
    watcher.quitting = true;  // called from on_signal: the mutex is ours already
  } else {
    std::lock_guard lock(watcher.mutex);
    watcher.quitting = true;
  }
  set_action(SIG_DFL);
}

StopOnSignals::StopOnSignals(std::atomic<bool>& stop, std::string note)
    : StopOnSignals([&stop] { stop.store(true); }, std::move(note)) {}

StopOnSignals::StopOnSignals(std::function<void()> on_first, std::string note)
    : signals_([this, on_first = std::move(on_first), note = std::move(note)](int) {
        if (asked_.exchange(true)) std::_Exit(kExitSecondSignal);  // a second Ctrl-C: the user means it
        if (!note.empty()) std::cerr << note << std::flush;
        on_first();
      }) {}

}  // namespace retrace
