// Helpers the diff renderers share (internal to report/).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "diff/diff.hpp"
#include "diff/differ_count.hpp"

namespace retrace::report {

// "baseline" for run 0, else the name of candidate run - 1.
std::string run_label(std::size_t run, const diff::Result& result);
std::string_view fail_on_name(diff::FailOn fail_on);

using diff::differ_count;  // diff/differ_count.hpp
using diff::DifferCount;

}  // namespace retrace::report
