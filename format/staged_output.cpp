#include "format/staged_output.hpp"

#include "format/trace.hpp"

namespace retrace {

StagedOutput::StagedOutput(const std::filesystem::path& in, const std::filesystem::path& out)
    : out_(out), temporary_(out) {
  temporary_ += ".tmp";
  std::error_code same_error;
  if (std::filesystem::equivalent(in, out, same_error))
    throw TraceError("refusing to write the trace over its own input " + in.string() +
                     "; give --out another name");
  std::error_code exists_error;
  if (std::filesystem::exists(temporary_, exists_error))
    throw TraceError(temporary_.string() +
                     " already exists: another import to the same output may be running, or one "
                     "was interrupted; remove it and try again");
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
