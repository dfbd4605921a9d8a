// retrace.diff(): diff/'s result as a table of pairs and a summary (diff_table.cpp).
#pragma once

#include <filesystem>

#include "diff/diff.hpp"
#include "python/columns.hpp"

namespace retrace::python {

// (DataFrame with one row per pair, identical ones included; the summary as a dict).
py::tuple diff_tables(const std::filesystem::path& baseline, const std::filesystem::path& run,
                      diff::Options options);

}  // namespace retrace::python
