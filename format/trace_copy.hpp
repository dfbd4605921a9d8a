// A finished trace under a new header, its frames copied byte for byte (format/trace_copy.cpp):
// how replay puts the run's final header on the file it wrote as it went.
#pragma once

#include <filesystem>

#include "format/trace.hpp"

namespace retrace {

// Writes `to`: the finished trace `from` under a new header, its exchange frames copied byte for
// byte (nothing decoded or compressed again) and its index rewritten for the new offsets; `from`
// is left as it was. False, before `to` is created, when `from` is not a whole trace with an
// index (torn, damaged, or written without one): read and write it record by record then.
bool copy_trace_with_header(const std::filesystem::path& from, const std::filesystem::path& to,
                            const TraceHeader& header, WriterOptions options = {});

}  // namespace retrace
