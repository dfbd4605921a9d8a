// The captured server responses in tests/data/, read whole.
#pragma once

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace retrace::testing {

// Any file, whole.
inline std::string read_path(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open test data " + path);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

inline std::string read_data(const std::string& relative) {
  return read_path(std::string(RETRACE_TEST_DATA) + "/" + relative);
}

// Every file under `root` (none when it is not a folder), sorted.
inline std::vector<std::filesystem::path> files_under(const std::filesystem::path& root) {
  std::vector<std::filesystem::path> files;
  if (!std::filesystem::is_directory(root)) return files;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
    if (entry.is_regular_file()) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// The shape corpus: every captured event stream (*.sse) in tests/data and the shared samples.
inline std::vector<std::filesystem::path> sse_files() {
  std::vector<std::filesystem::path> files;
  for (const char* root : {RETRACE_TEST_DATA, RETRACE_SAMPLES}) {
    if (!std::filesystem::is_directory(root)) continue;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(root))
      if (entry.is_regular_file() && entry.path().extension() == ".sse") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace retrace::testing
