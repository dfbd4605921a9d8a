#include "report/svg.hpp"

#include <algorithm>
#include <cmath>

#include "report/text.hpp"

namespace retrace::report::svg {

namespace {

constexpr int kWidth = 560, kHeight = 300;
constexpr int kLeft = 64, kRight = 16, kTop = 34, kBottom = 44;
constexpr int kPlotWidth = kWidth - kLeft - kRight, kPlotHeight = kHeight - kTop - kBottom;

// A tick step of 1, 2 or 5 × 10^k giving about five ticks up to `max`.
double tick_step(double max) {
  if (max <= 0) return 1;
  double rough = max / 5, power = std::pow(10.0, std::floor(std::log10(rough)));
  for (double factor : {1.0, 2.0, 5.0, 10.0})
    if (factor * power >= rough) return factor * power;
  return 10 * power;
}

int digits_for(double step) { return step >= 1 ? 0 : int(std::ceil(-std::log10(step))); }

std::string open_svg(const std::string& title) {
  return "<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 " +
         std::to_string(kWidth) + " " + std::to_string(kHeight) + "\" role=\"img\" aria-label=\"" +
         html_escape(title) + "\"><title>" + html_escape(title) + "</title><text class=\"chart-title\" x=\"" +
         std::to_string(kLeft) + "\" y=\"20\">" + html_escape(title) + "</text>";
}

std::string text_at(double x, double y, const std::string& text, const char* anchor) {
  return "<text x=\"" + fixed(x, 1) + "\" y=\"" + fixed(y, 1) + "\" text-anchor=\"" + anchor +
         "\">" + html_escape(text) + "</text>";
}

// Axes with a y scale 0..y_max (ticks labelled by `y_label`) and an x axis caption.
std::string axes(double y_max, const std::string& x_caption, const std::string& y_caption) {
  std::string out;
  double step = tick_step(y_max);
  for (double tick = 0; tick <= y_max * 1.0001; tick += step) {
    double y = kTop + kPlotHeight - tick / y_max * kPlotHeight;
    out += "<line class=\"grid\" x1=\"" + std::to_string(kLeft) + "\" x2=\"" +
           std::to_string(kLeft + kPlotWidth) + "\" y1=\"" + fixed(y, 1) + "\" y2=\"" + fixed(y, 1) + "\"/>";
    out += text_at(kLeft - 6, y + 4, fixed(tick, digits_for(step)), "end");
  }
  out += "<line class=\"axis\" x1=\"" + std::to_string(kLeft) + "\" x2=\"" + std::to_string(kLeft) +
         "\" y1=\"" + std::to_string(kTop) + "\" y2=\"" + std::to_string(kTop + kPlotHeight) + "\"/>";
  out += "<line class=\"axis\" x1=\"" + std::to_string(kLeft) + "\" x2=\"" +
         std::to_string(kLeft + kPlotWidth) + "\" y1=\"" + std::to_string(kTop + kPlotHeight) +
         "\" y2=\"" + std::to_string(kTop + kPlotHeight) + "\"/>";
  out += text_at(kLeft + kPlotWidth / 2.0, kHeight - 6, x_caption, "middle");
  out += "<text transform=\"rotate(-90)\" x=\"" + fixed(-(kTop + kPlotHeight / 2.0), 1) +
         "\" y=\"14\" text-anchor=\"middle\">" + html_escape(y_caption) + "</text>";
  return out;
}

// A chart's legend, and how much taller it makes the chart. On the title's line, right-aligned,
// when it fits beside the title; else in rows under the chart, so that it never covers the title
// (widths estimated: 8 px a character of the 13 px title, 7 of an 11 px label).
struct Legend {
  std::string svg;
  int extra_height = 0;
};
Legend legend(const std::string& title, const std::vector<std::string>& labels) {
  auto width_of = [](const std::string& label) { return 18 + 7.0 * double(label.size()); };
  double total = 0;
  for (const auto& label : labels) total += width_of(label);
  double title_end = kLeft + 8.0 * double(title.size()) + 12;
  std::string out = "<g class=\"legend\">";
  auto item = [&](std::size_t i, double x, double y) {
    out += "<rect x=\"" + fixed(x, 1) + "\" y=\"" + fixed(y, 1) + "\" width=\"10\" height=\"10\" fill=\"" +
           colour(i) + "\"/>" + text_at(x + 13, y + 9, labels[i], "start");
  };
  if (kLeft + kPlotWidth - total >= title_end) {
    double x = kLeft + kPlotWidth;
    for (std::size_t i = labels.size(); i-- > 0;) {
      x -= width_of(labels[i]);
      item(i, x, 10);
    }
    return {out + "</g>", 0};
  }
  constexpr int kRow = 16;
  double x = kLeft;
  int row = 0;
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (x > kLeft && x + width_of(labels[i]) > kLeft + kPlotWidth) {
      x = kLeft;
      ++row;
    }
    item(i, x, kHeight + 2 + row * kRow);
    x += width_of(labels[i]);
  }
  return {out + "</g>", (row + 1) * kRow + 4};
}

// A chart closed with its legend: when the legend takes rows under the chart, a taller viewBox
// holds them.
std::string closed_with_legend(std::string out, const std::string& title, const std::vector<std::string>& labels) {
  auto key = legend(title, labels);
  if (key.extra_height > 0) {
    const std::string box = "viewBox=\"0 0 " + std::to_string(kWidth) + " " + std::to_string(kHeight) + "\"";
    out.replace(out.find(box), box.size(),
                "viewBox=\"0 0 " + std::to_string(kWidth) + " " + std::to_string(kHeight + key.extra_height) + "\"");
  }
  return out + key.svg + "</svg>";
}

// The axes of a chart of y against a numeric x from 0: y's scale rounded up to a tick when it is
// the data's (`data_scale`), x's to a tick past 105 % of its largest; both maxima updated.
std::string xy_axes(double& x_max, double& y_max, bool data_scale, const std::string& x_caption,
                    const std::string& unit) {
  if (y_max <= 0) y_max = 1;
  if (data_scale) y_max = std::ceil(y_max / tick_step(y_max)) * tick_step(y_max);
  double x_step = tick_step(x_max > 0 ? x_max : 1);
  x_max = std::max(x_step, std::ceil(x_max * 1.05 / x_step) * x_step);
  std::string out = axes(y_max, x_caption, unit);
  for (double tick = x_step; tick <= x_max * 1.0001; tick += x_step)
    out += text_at(kLeft + tick / x_max * kPlotWidth, kTop + kPlotHeight + 16, fixed(tick, digits_for(x_step)), "middle");
  return out;
}

}  // namespace

const char* colour(std::size_t index) {
  static const char* kPalette[] = {"#0072b2", "#e69f00", "#009e73", "#cc79a7",
                                   "#56b4e9", "#d55e00", "#f0e442", "#000000"};
  return kPalette[index % (sizeof kPalette / sizeof kPalette[0])];
}

std::string cdf_chart(const std::string& title, const std::string& unit, const std::vector<Series>& series) {
  double x_max = 0;
  for (const auto& one : series)
    if (one.distribution && one.distribution->count > 0) x_max = std::max(x_max, one.distribution->max);
  std::string out = open_svg(title);
  if (x_max <= 0) return out + text_at(kWidth / 2.0, kHeight / 2.0, "no samples", "middle") + "</svg>";
  double step = tick_step(x_max);
  x_max = std::ceil(x_max / step) * step;
  out += axes(1.0, unit, "fraction ≤ x");
  for (double tick = step; tick <= x_max * 1.0001; tick += step) {
    double x = kLeft + tick / x_max * kPlotWidth;
    out += text_at(x, kTop + kPlotHeight + 16, fixed(tick, digits_for(step)), "middle");
  }
  std::vector<std::string> labels;
  for (std::size_t s = 0; s < series.size(); ++s) {
    labels.push_back(series[s].label);
    const auto* distribution = series[s].distribution;
    if (!distribution || distribution->count == 0) continue;
    // A step function through at most 256 quantiles keeps the page small at any sample count.
    std::size_t n = distribution->count, points = std::min<std::size_t>(n, 256);
    std::string path;
    for (std::size_t p = 0; p < points; ++p) {
      std::size_t index = points == n ? p : (p * (n - 1)) / (points - 1);
      double x = kLeft + distribution->at_rank(index + 1) / x_max * kPlotWidth;
      double y_below = kTop + kPlotHeight - double(index) / double(n) * kPlotHeight;
      double y = kTop + kPlotHeight - double(index + 1) / double(n) * kPlotHeight;
      path += (p == 0 ? "M" : "L") + fixed(x, 1) + " " + fixed(y_below, 1) + "L" + fixed(x, 1) + " " + fixed(y, 1);
    }
    out += "<path class=\"cdf\" data-series=\"" + html_escape(series[s].label) + "\" d=\"" + path +
           "\" stroke=\"" + colour(s) + "\"/>";
  }
  return closed_with_legend(std::move(out), title, labels);
}

std::string bar_chart(const std::string& title, const std::string& unit, const std::vector<Bar>& bars) {
  double y_max = 0;
  for (const auto& bar : bars) {
    y_max = std::max({y_max, bar.value, bar.high.value_or(0)});
    for (double point : bar.points) y_max = std::max(y_max, point);
  }
  std::string out = open_svg(title);
  if (bars.empty()) return out + text_at(kWidth / 2.0, kHeight / 2.0, "no data", "middle") + "</svg>";
  if (y_max <= 0) y_max = 1;
  double step = tick_step(y_max);
  y_max = std::ceil(y_max / step) * step;
  out += axes(y_max, "", unit);
  double slot = double(kPlotWidth) / double(bars.size()), width = std::min(slot * 0.6, 60.0);
  auto y_of = [&](double value) { return kTop + kPlotHeight - value / y_max * kPlotHeight; };
  for (std::size_t i = 0; i < bars.size(); ++i) {
    const auto& bar = bars[i];
    double middle = kLeft + slot * (double(i) + 0.5);
    out += "<rect class=\"bar\" x=\"" + fixed(middle - width / 2, 1) + "\" y=\"" + fixed(y_of(bar.value), 1) +
           "\" width=\"" + fixed(width, 1) + "\" height=\"" + fixed(kTop + kPlotHeight - y_of(bar.value), 1) +
           "\" fill=\"" + colour(0) + "\"><title>" + html_escape(bar.label) + ": " + fixed(bar.value, 2) +
           "</title></rect>";
    if (bar.low && bar.high) {
      double low = y_of(std::max(0.0, *bar.low)), high = y_of(*bar.high);
      out += "<path class=\"whisker\" d=\"M" + fixed(middle, 1) + " " + fixed(low, 1) + "V" + fixed(high, 1) +
             "M" + fixed(middle - 6, 1) + " " + fixed(low, 1) + "h12M" + fixed(middle - 6, 1) + " " +
             fixed(high, 1) + "h12\"/>";
    }
    for (double point : bar.points)
      out += "<circle class=\"sample\" cx=\"" + fixed(middle + width / 4, 1) + "\" cy=\"" +
             fixed(y_of(point), 1) + "\" r=\"3\"/>";
    out += text_at(middle, kTop + kPlotHeight + 16, bar.label, "middle");
  }
  return out + "</svg>";
}

std::string line_chart(const std::string& title, const std::string& x_caption, const std::string& unit,
                       const std::vector<Point>& points, double y_max, const LineMarks& marks) {
  std::string out = open_svg(title);
  if (points.empty()) return out + text_at(kWidth / 2.0, kHeight / 2.0, "no data", "middle") + "</svg>";
  double x_max = 0;
  bool data_scale = y_max <= 0;
  for (const auto& point : points) {
    x_max = std::max(x_max, point.x);
    if (data_scale) y_max = std::max({y_max, point.y, point.high.value_or(0)});
  }
  out += xy_axes(x_max, y_max, data_scale, x_caption, unit);
  auto x_of = [&](double x) { return kLeft + x / x_max * kPlotWidth; };
  auto y_of = [&](double y) { return kTop + kPlotHeight - std::clamp(y, 0.0, y_max) / y_max * kPlotHeight; };
  if (marks.target)
    out += "<line class=\"target\" stroke-dasharray=\"6 4\" stroke=\"#d55e00\" x1=\"" + std::to_string(kLeft) +
           "\" x2=\"" + std::to_string(kLeft + kPlotWidth) + "\" y1=\"" + fixed(y_of(*marks.target), 1) + "\" y2=\"" +
           fixed(y_of(*marks.target), 1) + "\"/>";
  if (marks.boundary)
    out += "<line class=\"boundary\" stroke=\"#009e73\" x1=\"" + fixed(x_of(*marks.boundary), 1) + "\" x2=\"" +
           fixed(x_of(*marks.boundary), 1) + "\" y1=\"" + std::to_string(kTop) + "\" y2=\"" +
           std::to_string(kTop + kPlotHeight) + "\"/>" +
           text_at(x_of(*marks.boundary) + 4, kTop + 12, marks.boundary_label, "start");
  auto sorted = points;
  std::stable_sort(sorted.begin(), sorted.end(), [](const Point& a, const Point& b) { return a.x < b.x; });
  std::string path;
  for (const auto& point : sorted)
    path += (path.empty() ? "M" : "L") + fixed(x_of(point.x), 1) + " " + fixed(y_of(point.y), 1);
  out += "<path class=\"line\" fill=\"none\" stroke=\"" + std::string(colour(0)) + "\" d=\"" + path + "\"/>";
  for (const auto& point : sorted) {
    double x = x_of(point.x);
    if (point.low && point.high)
      out += "<path class=\"whisker\" d=\"M" + fixed(x, 1) + " " + fixed(y_of(*point.low), 1) + "V" +
             fixed(y_of(*point.high), 1) + "M" + fixed(x - 4, 1) + " " + fixed(y_of(*point.low), 1) + "h8M" +
             fixed(x - 4, 1) + " " + fixed(y_of(*point.high), 1) + "h8\"/>";
    out += "<circle class=\"point\" cx=\"" + fixed(x, 1) + "\" cy=\"" + fixed(y_of(point.y), 1) + "\" r=\"3.5\" fill=\"" +
           colour(0) + "\"><title>" + html_escape(point.label) + "</title></circle>";
  }
  return out + "</svg>";
}

std::string lines_chart(const std::string& title, const std::string& x_caption, const std::string& unit,
                        const std::vector<Line>& lines, double y_max) {
  std::string out = open_svg(title);
  double x_max = 0;
  bool data_scale = y_max <= 0;
  bool any = false;
  for (const auto& line : lines)
    for (const auto& [x, y] : line.points) {
      any = true;
      x_max = std::max(x_max, x);
      if (data_scale) y_max = std::max(y_max, y);
    }
  if (!any) return out + text_at(kWidth / 2.0, kHeight / 2.0, "no data", "middle") + "</svg>";
  out += xy_axes(x_max, y_max, data_scale, x_caption, unit);
  auto x_of = [&](double x) { return kLeft + x / x_max * kPlotWidth; };
  auto y_of = [&](double y) { return kTop + kPlotHeight - std::clamp(y, 0.0, y_max) / y_max * kPlotHeight; };
  std::vector<std::string> labels;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const auto& points = lines[i].points;
    labels.push_back(lines[i].label);
    if (points.empty()) continue;
    std::size_t every = (points.size() + kMostLinePoints - 1) / kMostLinePoints;
    std::string path;
    for (std::size_t p = 0; p < points.size(); p += every) {
      const auto& [x, y] = points[p];
      path += path.empty() ? "M" + fixed(x_of(x), 1) + " " + fixed(y_of(y), 1)
                           : "H" + fixed(x_of(x), 1) + "V" + fixed(y_of(y), 1);
    }
    out += "<path class=\"line\" data-series=\"" + html_escape(lines[i].label) + "\" fill=\"none\" stroke=\"" +
           colour(i) + "\" d=\"" + path + "\"/>";
  }
  return closed_with_legend(std::move(out), title, labels);
}

}  // namespace retrace::report::svg
