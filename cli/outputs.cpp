#include "cli/outputs.hpp"

#include <stdexcept>
#include <system_error>

namespace retrace::cli {

namespace fs = std::filesystem;

CLI::Option* add_force_flag(CLI::App& command, bool& force, const std::string& what) {
  return command.add_flag("--force,-f", force, what);
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

}  // namespace retrace::cli
