// SVG charts drawn by retrace, for the HTML report (internal to report/).
//
// Why SVG text written here rather than a chart library from npm embedded at build time: no
// network or npm step in the build, nothing vendored to keep patched, the page needs no script to
// show its charts, and the output is a deterministic function of the input, so golden tests can
// compare it byte for byte. Every label is HTML-escaped; numbers are fixed-point.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "metrics/distribution.hpp"

namespace retrace::report::svg {

struct Series {
  std::string label;
  const metrics::Percentiles* distribution = nullptr;  // not owned; null or count 0: no samples
};

// Empirical CDFs, one line per series (at most 256 points each, read from the distribution by
// rank: the samples themselves up to metrics::Distribution's exact limit, its histogram above),
// x in `unit` from 0.
std::string cdf_chart(const std::string& title, const std::string& unit, const std::vector<Series>& series);

struct Bar {
  std::string label;
  double value = 0;
  std::optional<double> low, high;  // a whisker (e.g. a confidence interval)
  std::vector<double> points;       // individual samples drawn as dots (e.g. repeats)
};

// Vertical bars from 0, with optional whiskers and sample dots.
std::string bar_chart(const std::string& title, const std::string& unit, const std::vector<Bar>& bars);

// y against a numeric x (e.g. SLO attainment against load): points joined in x order, each with
// an optional whisker (an interval), a dashed horizontal line at `target` and a vertical mark at
// `boundary` when given. y from 0 to `y_max` (0: the data's largest).
struct Point {
  double x = 0, y = 0;
  std::optional<double> low, high;
  std::string label;  // shown on hover
};
struct LineMarks {
  std::optional<double> target;    // y
  std::optional<double> boundary;  // x
  std::string boundary_label;
};
std::string line_chart(const std::string& title, const std::string& x_caption, const std::string& unit,
                       const std::vector<Point>& points, double y_max = 0, const LineMarks& marks = {});

// Lines over a numeric x (a run's series over time), each held at its value until its next point
// (a sample's value stands until the next sample), with a legend. y from 0 to `y_max` (0: the
// data's largest). At most kMostLinePoints points a line are drawn (every k-th past that).
struct Line {
  std::string label;
  std::vector<std::pair<double, double>> points;  // (x, y), x growing
};
inline constexpr std::size_t kMostLinePoints = 1000;
std::string lines_chart(const std::string& title, const std::string& x_caption, const std::string& unit,
                        const std::vector<Line>& lines, double y_max = 0);

// The colour of series `index` (a fixed palette, distinguishable in print and for most colour
// vision deficiencies).
const char* colour(std::size_t index);

}  // namespace retrace::report::svg
