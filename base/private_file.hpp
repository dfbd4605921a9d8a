// Writing files that hold prompts, outputs and settings (traces, plans, summaries, reports): mode
// 0600 in directories of mode 0700, whatever the umask, and never through a name someone else
// could have prepared. A temporary is made new (O_EXCL, so a planted file or symlink under its
// name makes the write fail rather than land where the symlink points) and renamed over the real
// name, so that after a crash it is the old version or the new one, whole.
#pragma once

#include <filesystem>
#include <string_view>

namespace retrace {

// Writes `bytes` to a new temporary PATH.tmp.XXXXXX (mkstemp: mode 0600, made new) in the same
// directory, fsyncs it, renames it over `path` and fsyncs the directory. Throws
// std::runtime_error naming the file and the system's reason.
void write_private_file(const std::filesystem::path& path, std::string_view bytes);

// Creates `path` as a new file for writing, mode 0600: O_CREAT|O_EXCL|O_NOFOLLOW, so it fails
// (EEXIST) when anything is there already, a symlink included. The descriptor, or -1 with errno.
int create_private_file(const std::filesystem::path& path);

// `path` and every missing directory above it, each new one mode 0700 (the umask cannot widen
// it). Directories already there keep their mode. Throws std::runtime_error naming the directory.
void create_private_directories(const std::filesystem::path& path);

}  // namespace retrace
