// Writing a whole small file (a plan, a summary, a report) the way trace files are written: mode
// 0600, since what it holds comes from prompts, outputs and settings, and replaced atomically, so
// that after a crash it is the old version or the new one, whole.
#pragma once

#include <filesystem>
#include <string_view>

namespace retrace {

// Writes `bytes` to PATH.tmp (mode 0600), fsyncs it, renames it over `path` and fsyncs the
// directory. Throws std::runtime_error naming the file and the system's reason.
void write_private_file(const std::filesystem::path& path, std::string_view bytes);

}  // namespace retrace
