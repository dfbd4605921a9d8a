#include "base/private_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace retrace {

namespace {

[[noreturn]] void fail(const std::string& what, const std::filesystem::path& path, int error) {
  throw std::runtime_error(what + " " + path.string() + ": " + std::strerror(error) +
                           (error == ENOSPC ? " (the disk is full; free space or write elsewhere)"
                                            : ""));
}

}  // namespace

int create_private_file(const std::filesystem::path& path) {
  return ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
}

void create_private_directories(const std::filesystem::path& path) {
  if (path.empty()) return;
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return;
  create_private_directories(path.parent_path());
  // mkdir's mode passes through the umask, which can only narrow 0700.
  if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) fail("cannot create directory", path, errno);
  if (!std::filesystem::is_directory(path, ec))
    fail("cannot create directory", path, ENOTDIR);
}

void write_private_file(const std::filesystem::path& path, std::string_view bytes) {
  // mkstemp: a name no one could have prepared, created new with mode 0600.
  std::string name = path.string() + ".tmp.XXXXXX";
  int fd = ::mkostemp(name.data(), O_CLOEXEC);
  if (fd < 0) fail("cannot write", path.string() + ".tmp.*", errno);
  std::filesystem::path temporary = name;
  std::size_t written = 0;
  while (written < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      int error = errno;
      ::close(fd);
      ::unlink(temporary.c_str());
      fail("cannot write", temporary, error);
    }
    written += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    int error = errno;
    ::unlink(temporary.c_str());
    fail("cannot write", temporary, error);
  }
  if (::rename(temporary.c_str(), path.c_str()) != 0) {
    int error = errno;
    ::unlink(temporary.c_str());
    fail("cannot replace", path, error);
  }
  auto directory = path.parent_path().empty() ? std::filesystem::path(".") : path.parent_path();
  int dir_fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
}

}  // namespace retrace
