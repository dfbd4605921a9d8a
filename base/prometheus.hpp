// Prometheus' text exposition format 0.0.4 (https://prometheus.io/docs/instrumenting/exposition_formats/),
// the one writer of it: `retrace serve`'s GET /metrics, `retrace record`'s admin endpoint, and any
// later one. Each family opens with its HELP and TYPE lines, then its samples:
//
//   # HELP retrace_record_exchanges_total Exchanges that ended, by outcome.
//   # TYPE retrace_record_exchanges_total counter
//   retrace_record_exchanges_total{outcome="recorded"} 1027
//
// Escaping is the format's: in HELP text a backslash and a line feed (\\, \n); in a label value
// those and a double quote (\"). Names are the caller's constants and are not checked. Values are
// written exactly: integers as integers, doubles in their shortest round-trip form, +Inf, -Inf
// and NaN as the format spells them.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

namespace retrace {

// The Content-Type of the text this writes.
inline constexpr std::string_view kPrometheusContentType = "text/plain; version=0.0.4; charset=utf-8";

class PrometheusText {
 public:
  struct Label {
    std::string_view name;
    std::string_view value;
  };

  // Opens a family: its HELP and TYPE lines. `type` is counter, gauge, untyped, ...
  void family(std::string_view name, std::string_view type, std::string_view help);
  // One sample of the family just opened (or one of its _sum/_count series).
  void sample(std::string_view name, std::initializer_list<Label> labels, std::uint64_t value);
  void sample(std::string_view name, std::initializer_list<Label> labels, double value);

  const std::string& text() const { return text_; }
  std::string take() { return std::move(text_); }

 private:
  void series(std::string_view name, std::initializer_list<Label> labels);
  std::string text_;
};

}  // namespace retrace
