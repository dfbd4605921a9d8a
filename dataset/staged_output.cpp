#include "dataset/staged_output.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/private_file.hpp"
#include "format/trace.hpp"

namespace retrace {

StagedOutput::StagedOutput(const std::filesystem::path& in, const std::filesystem::path& out)
    : out_(out), temporary_(out) {
  temporary_ += ".tmp";
  std::error_code same_error;
  if (std::filesystem::equivalent(in, out, same_error))
    throw TraceError("refusing to write the trace over its own input " + in.string() +
                     "; give --out another name");
  // Made new here, so that a file or symlink already under the name is never written through
  // (the trace writer then truncates the file made here).
  int fd = create_private_file(temporary_);
  if (fd < 0 && errno == EEXIST)
    throw TraceError(temporary_.string() +
                     " already exists: another import to the same output may be running, or one "
                     "was interrupted; remove it and try again");
  if (fd < 0) throw TraceError("cannot create " + temporary_.string() + ": " + std::strerror(errno));
  ::close(fd);
}

StagedOutput::~StagedOutput() {
  if (committed_) return;
  std::error_code ignored;
  std::filesystem::remove(temporary_, ignored);
}

void StagedOutput::commit() {
  std::filesystem::rename(temporary_, out_);
  committed_ = true;
}

}  // namespace retrace
