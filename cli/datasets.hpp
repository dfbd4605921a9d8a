// The demo's datasets (traces/*.jsonl and the gold trace), compiled into the binary by
// cmake/embed.cmake so that `retrace demo` runs from any directory with nothing else installed.
#pragma once

#include <string_view>
#include <utility>
#include <vector>

namespace retrace::cli {

// (file name, bytes); the bytes live as long as the program.
using EmbeddedFile = std::pair<std::string_view, std::string_view>;
const std::vector<EmbeddedFile>& embedded_datasets();

}  // namespace retrace::cli
