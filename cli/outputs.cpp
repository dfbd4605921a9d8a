#include "cli/outputs.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <stdexcept>
#include <streambuf>
#include <system_error>

#include "cli/commands.hpp"

namespace retrace::cli {

namespace fs = std::filesystem;

CLI::Option* add_force_flag(CLI::App& command, bool& force, const std::string& what) {
  return command.add_flag("--force,-f", force, what);
}

CLI::Option* add_keep_secrets_flag(CLI::App& command, bool& keep_secrets) {
  return command.add_flag("--keep-secrets", keep_secrets,
                          "Record secret headers, query parameters and body fields verbatim (NOT "
                          "recommended)");
}

void warn_keep_secrets(std::string_view command, const std::string& where) {
  std::cerr << "retrace " << command << ": warning: --keep-secrets: Authorization, API keys and cookies "
               "will be written to " << where << " in clear text\n";
}

namespace {

bool same_file(const fs::path& a, const fs::path& b) {
  std::error_code ec;
  return fs::equivalent(a, b, ec) && !ec;
}

}  // namespace

void check_output_file(const fs::path& out, const std::vector<fs::path>& inputs, bool force,
                       std::string_view flag) {
  auto where = std::string(flag) + " " + out.string();
  for (const auto& input : inputs)
    if (same_file(out, input))
      throw std::invalid_argument(where + ": that is the input " + input.string() +
                                  "; writing it would destroy what is being read (choose another " +
                                  std::string(flag) + ")");
  std::error_code ec;
  if (fs::is_directory(out, ec))
    throw std::invalid_argument(where + ": is a directory; give a file name");
  if (!force && fs::exists(out, ec))
    throw std::invalid_argument(where + ": already exists; choose another " + std::string(flag) +
                                " or add --force to replace it");
}

void check_output_dir(const fs::path& dir, bool force, std::string_view flag) {
  auto where = std::string(flag) + " " + dir.string();
  std::error_code ec;
  if (!fs::exists(dir, ec)) return;
  if (!fs::is_directory(dir, ec)) throw std::invalid_argument(where + ": is a file, not a directory");
  if (!force && !fs::is_empty(dir, ec))
    throw std::invalid_argument(where + ": already exists and is not empty; choose another " +
                                std::string(flag) + " or add --force to write into it");
}

namespace {

// std::cout's buffer: 64 KiB written to descriptor 1 with write(2), every byte the system took
// counted, the first errno kept. After a failure nothing more is written (the rest would be a
// stream with a hole in it) and every write reports failure, which makes std::cout bad.
class CheckedStdout final : public std::streambuf {
 public:
  // On a terminal nothing waits in the buffer: what a person is shown goes out as it is written.
  CheckedStdout() : unbuffered_(::isatty(STDOUT_FILENO) != 0) {
    if (!unbuffered_) setp(buffer_, buffer_ + sizeof buffer_);
  }
  std::uint64_t written() const { return written_; }
  int error() const { return error_; }

 protected:
  int_type overflow(int_type ch) override {
    if (!drain()) return traits_type::eof();
    if (traits_type::eq_int_type(ch, traits_type::eof())) return traits_type::not_eof(ch);
    const char byte = traits_type::to_char_type(ch);
    if (unbuffered_) return write_all(&byte, 1) ? ch : traits_type::eof();
    *pptr() = byte;
    pbump(1);
    return ch;
  }
  std::streamsize xsputn(const char* bytes, std::streamsize count) override {
    const auto size = static_cast<std::size_t>(count);
    if (unbuffered_) return write_all(bytes, size) ? count : 0;
    if (size <= static_cast<std::size_t>(epptr() - pptr())) {
      std::memcpy(pptr(), bytes, size);
      pbump(static_cast<int>(count));
      return count;
    }
    if (!drain()) return 0;
    if (size < sizeof buffer_) return xsputn(bytes, count);
    return write_all(bytes, size) ? count : 0;
  }
  int sync() override { return drain() ? 0 : -1; }

 private:
  bool drain() {
    const auto size = static_cast<std::size_t>(pptr() - pbase());
    if (!unbuffered_) setp(buffer_, buffer_ + sizeof buffer_);
    return write_all(buffer_, size);
  }
  bool write_all(const char* bytes, std::size_t size) {
    while (size > 0 && error_ == 0) {
      const ssize_t n = ::write(STDOUT_FILENO, bytes, size);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        error_ = n < 0 ? errno : EIO;
        break;
      }
      written_ += static_cast<std::uint64_t>(n);
      bytes += n;
      size -= static_cast<std::size_t>(n);
    }
    return error_ == 0;
  }

  bool unbuffered_;
  char buffer_[64 << 10];
  std::uint64_t written_ = 0;
  int error_ = 0;
};

// Never destroyed: std::cout may be flushed at exit, after static destructors.
CheckedStdout* checked_stdout = nullptr;

}  // namespace

void check_stdout() {
  if (!checked_stdout) checked_stdout = new CheckedStdout;
  std::cout.rdbuf(checked_stdout);
}

int finish_stdout(int exit_code) {
  std::cout.flush();
  if (!checked_stdout || checked_stdout->error() == 0 || checked_stdout->error() == EPIPE) return exit_code;
  std::cerr << "retrace: error: writing stdout failed after " << checked_stdout->written()
            << " bytes: " << std::strerror(checked_stdout->error())
            << "; the output is incomplete (write it where there is room, or to a file with the "
               "command's own output flag)\n";
  return kExitError;
}

}  // namespace retrace::cli
