// The captured server responses in tests/data/, read whole.
#pragma once

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

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

}  // namespace retrace::testing
