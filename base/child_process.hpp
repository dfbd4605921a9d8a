// Child processes: the servers demo starts and must always stop, and bisect's --run commands.
// Nothing of retrace is used here; POSIX fork/exec, pipes and waitpid only.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace retrace::sweep {

// A child process, killed (SIGTERM, then SIGKILL after a grace period) when destroyed.
class Child {
 public:
  // Starts argv[0] with argv; its stdout is captured (read_line), stderr goes to `stderr_path`
  // (or is inherited when empty).
  Child(const std::vector<std::string>& argv, const std::filesystem::path& stderr_path = {});
  ~Child();
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  // Waits up to `timeout_ms` for a stdout line "listening on http://HOST:PORT"; returns the URL.
  // Throws std::runtime_error (with the child's stderr tail) when it exits or times out.
  std::string wait_listening(int timeout_ms);
  // SIGTERM, then waits up to `grace_ms` before SIGKILL; returns the exit status (or -signal).
  int stop(int grace_ms = 5000);
  int pid() const { return pid_; }

 private:
  int pid_ = -1;
  int stdout_fd_ = -1;
  std::string buffered_;
  std::filesystem::path stderr_path_;
  bool reaped_ = false;
  int status_ = 0;
};

struct ShellResult {
  int exit_code = 0;  // 128 + signal when killed by one
  std::string output;  // stdout and stderr interleaved
};
// Runs `command` with /bin/sh -c, collecting its output.
ShellResult run_shell(const std::string& command);

}  // namespace retrace::sweep
