// The tables the module hands to Python, each built in C++ from the code the commands run
// (format/'s reader, metrics/'s figures, diff/'s engine): python/module.cpp binds them.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "format/trace.hpp"
#include "python/columns.hpp"

namespace retrace::python {

// What a reader had to drop (a torn tail, a gap in a segment set), said as the commands say it,
// and raised as Python warnings once the GIL is held again.
struct Warnings {
  std::vector<std::string> lines;
  void add(const std::filesystem::path& path, const Recovery& recovery);
  void emit() const;
};

// Trace.exchanges(): one row per exchange (exchange_table.cpp).
py::object exchanges_table(const std::filesystem::path& path, Warnings& warnings);
// Trace.chunks(): one row per output token, `ids` the exchanges wanted (empty: all).
py::object chunks_table(const std::filesystem::path& path, const std::vector<std::uint64_t>& ids,
                        Warnings& warnings);
// Trace.metrics(): one row per scraped series value (format 1.5); no rows when none was scraped.
py::object metrics_table(const std::filesystem::path& path, Warnings& warnings);

}  // namespace retrace::python
