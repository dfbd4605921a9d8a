// Internal to format/: what a file that is not a trace looks like, for the reader's error.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>

namespace retrace::detail {

// "PATH is not a retrace trace (not a zstd stream): it looks like gzip; ..." from the file's
// first bytes: what it seems to be, and what to try.
std::string sniff(const std::filesystem::path& path, const char* bytes, std::size_t size);

}  // namespace retrace::detail
