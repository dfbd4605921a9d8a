#include "format/private_file.hpp"

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

void write_private_file(const std::filesystem::path& path, std::string_view bytes) {
  auto temporary = path;
  temporary += ".tmp";
  int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) fail("cannot write", temporary, errno);
  // An existing PATH.tmp keeps its mode through O_TRUNC: narrow it, as the trace writer does.
  ::fchmod(fd, 0600);
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
  if (::rename(temporary.c_str(), path.c_str()) != 0) fail("cannot replace", path, errno);
  auto directory = path.parent_path().empty() ? std::filesystem::path(".") : path.parent_path();
  int dir_fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
}

}  // namespace retrace
