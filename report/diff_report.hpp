// Rendering of diff results: a terminal summary, JSON with everything, Markdown for pull requests.
#pragma once

#include <cstddef>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "diff/diff.hpp"
#include "base/text.hpp"  // printable(): token bytes on one line

namespace retrace::report {

struct DiffRenderOptions {
  bool color = false;          // ANSI colour (the caller decides: a TTY and no NO_COLOR)
  std::size_t show = 10;       // divergences listed in full (terminal, Markdown); JSON lists all
  diff::FailOn fail_on = diff::FailOn::any;
  std::size_t max_divergent = 0;  // failures tolerated before the exit code says "differ"
  double near_tie = diff::kDefaultNearTieMargin;
  bool expect = false;
};

// The exit code the options' policy gives: 0 within policy, 1 otherwise.
int diff_exit_code(const diff::Result& result, const DiffRenderOptions& options);

void render_diff_terminal(const diff::Result& result, const DiffRenderOptions& options, std::ostream& out);
void render_diff_json(const diff::Result& result, const DiffRenderOptions& options, std::ostream& out);
void render_diff_markdown(const diff::Result& result, const DiffRenderOptions& options, std::ostream& out);
// The summary as CSV: one row per candidate run (counts, the bound on the difference rate, gold
// matching) under a header row.
void render_diff_csv(const diff::Result& result, std::ostream& out);

// First-divergence positions counted in log2 buckets ("0", "1", "2-3", "4-7", ...), empty ones left out.
std::vector<std::pair<std::string, std::size_t>> position_buckets(const std::vector<std::size_t>& positions);

}  // namespace retrace::report
