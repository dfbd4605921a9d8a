// Markdown made for a terminal: each pipe table becomes aligned columns (no pipes, no separator
// row) and, when even that is wider than the terminal, one "column: value" block per row, so
// nothing wraps. Lines outside tables pass through unchanged. Lets a command keep one renderer
// (its Markdown) and still print aligned text to a person.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace retrace::report {

// `width`: the terminal's columns; 0 = no limit (aligned columns always).
std::string markdown_for_terminal(std::string_view markdown, std::size_t width);

}  // namespace retrace::report
