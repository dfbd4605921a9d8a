#include "base/child_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace retrace::sweep {

namespace {

std::string tail_of(const std::filesystem::path& path, std::size_t bytes) {
  if (path.empty()) return {};
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  std::string all = text.str();
  return all.size() > bytes ? all.substr(all.size() - bytes) : all;
}

int decode_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

// Everything the forked child needs, prepared before fork: after fork only async-signal-safe
// calls are allowed (other threads may hold the allocator's lock).
struct ExecPlan {
  std::vector<std::string> storage;
  std::vector<char*> argv;
  explicit ExecPlan(const std::vector<std::string>& args) : storage(args) {
    for (auto& arg : storage) argv.push_back(arg.data());
    argv.push_back(nullptr);
  }
};

[[noreturn]] void exec_child(ExecPlan& plan, int stdout_fd, int stderr_fd, bool die_with_parent) {
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);  // whatever mask the forking thread had
  signal(SIGPIPE, SIG_DFL);
  if (die_with_parent) prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (stdout_fd >= 0) dup2(stdout_fd, STDOUT_FILENO);
  if (stderr_fd >= 0) dup2(stderr_fd, STDERR_FILENO);
  execv(plan.argv[0], plan.argv.data());
  const char message[] = "retrace: cannot execute child program\n";
  ssize_t ignored = write(STDERR_FILENO, message, sizeof message - 1);
  (void)ignored;
  _exit(127);
}

}  // namespace

Child::Child(const std::vector<std::string>& argv, const std::filesystem::path& stderr_path)
    : stderr_path_(stderr_path) {
  if (argv.empty()) throw std::invalid_argument("Child: empty command");
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0)
    throw std::runtime_error(std::string("cannot create a pipe: ") + std::strerror(errno));
  int stderr_fd = -1;
  if (!stderr_path.empty()) {
    stderr_fd = ::open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (stderr_fd < 0) {
      ::close(pipe_fds[0]);
      ::close(pipe_fds[1]);
      throw std::runtime_error("cannot write " + stderr_path.string() + ": " + std::strerror(errno));
    }
  }
  ExecPlan plan(argv);
  pid_ = fork();
  if (pid_ == 0) exec_child(plan, pipe_fds[1], stderr_fd, true);
  int saved = errno;
  ::close(pipe_fds[1]);
  if (stderr_fd >= 0) ::close(stderr_fd);
  if (pid_ < 0) {
    ::close(pipe_fds[0]);
    throw std::runtime_error(std::string("cannot start ") + argv[0] + ": " + std::strerror(saved));
  }
  stdout_fd_ = pipe_fds[0];
}

Child::~Child() {
  try {
    stop(3000);
  } catch (...) {
  }
  if (stdout_fd_ >= 0) ::close(stdout_fd_);
}

std::string Child::wait_listening(int timeout_ms) {
  // Deadlines here bound waiting, so they run on real time (the poll's), not on an injected Clock.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  const std::string marker = "listening on ";
  while (true) {
    std::size_t newline;
    while ((newline = buffered_.find('\n')) != std::string::npos) {
      std::string line = buffered_.substr(0, newline);
      buffered_.erase(0, newline + 1);
      auto at = line.find(marker + "http");
      if (at != std::string::npos) {
        std::string url = line.substr(at + marker.size());
        auto space = url.find_first_of(" \t\r");
        return space == std::string::npos ? url : url.substr(0, space);
      }
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
    if (left <= 0)
      throw std::runtime_error("child " + std::to_string(pid_) + " did not print 'listening on' within " +
                               std::to_string(timeout_ms) + " ms; its stderr:\n" +
                               tail_of(stderr_path_, 2000));
    pollfd fd{stdout_fd_, POLLIN, 0};
    int ready = ::poll(&fd, 1, static_cast<int>(left));
    if (ready < 0 && errno != EINTR)
      throw std::runtime_error(std::string("poll: ") + std::strerror(errno));
    if (ready <= 0) continue;
    char buffer[4096];
    ssize_t n = ::read(stdout_fd_, buffer, sizeof buffer);
    if (n <= 0)
      throw std::runtime_error("child " + std::to_string(pid_) +
                               " exited before it was listening; its stderr:\n" +
                               tail_of(stderr_path_, 2000));
    buffered_.append(buffer, static_cast<std::size_t>(n));
  }
}

int Child::stop(int grace_ms) {
  if (pid_ <= 0 || reaped_) return status_;
  ::kill(pid_, SIGTERM);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(grace_ms);
  int status = 0;
  while (true) {
    pid_t done = ::waitpid(pid_, &status, WNOHANG);
    if (done == pid_) break;
    if (done < 0 && errno != EINTR) {
      reaped_ = true;
      return status_ = -1;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  reaped_ = true;
  status_ = decode_status(status);
  return status_;
}

ShellResult run_shell(const std::string& command) {
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0)
    throw std::runtime_error(std::string("cannot create a pipe: ") + std::strerror(errno));
  ExecPlan plan({"/bin/sh", "-c", command});
  pid_t pid = fork();
  if (pid == 0) exec_child(plan, pipe_fds[1], pipe_fds[1], false);
  int saved = errno;
  ::close(pipe_fds[1]);
  if (pid < 0) {
    ::close(pipe_fds[0]);
    throw std::runtime_error(std::string("cannot start /bin/sh: ") + std::strerror(saved));
  }
  ShellResult result;
  char buffer[4096];
  while (true) {
    ssize_t n = ::read(pipe_fds[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    result.output.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(pipe_fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.exit_code = decode_status(status);
  return result;
}

}  // namespace retrace::sweep
