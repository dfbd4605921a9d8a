// An import's output is whole or absent: the trace is written to OUT.tmp and renamed over OUT only
// when every row went in, so a bad row or a crash leaves no half trace under the name asked for.
#pragma once

#include <filesystem>

namespace retrace {

class StagedOutput {
 public:
  // Creates OUT.tmp new (mode 0600, base/private_file.hpp). Throws TraceError when `out` is the
  // input itself or OUT.tmp already exists, a symlink included (another import to the same output
  // running, or one interrupted).
  StagedOutput(const std::filesystem::path& in, const std::filesystem::path& out);
  ~StagedOutput();  // removes OUT.tmp unless commit() ran
  StagedOutput(const StagedOutput&) = delete;
  StagedOutput& operator=(const StagedOutput&) = delete;

  const std::filesystem::path& temporary() const { return temporary_; }
  void commit();  // renames OUT.tmp to OUT

 private:
  std::filesystem::path out_;
  std::filesystem::path temporary_;
  bool committed_ = false;
};

}  // namespace retrace
