#include "report/text.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>

#include <boost/json.hpp>

#include "report/statistics.hpp"

namespace retrace::report {

namespace json = boost::json;

std::string fixed(double value, int digits) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", digits, value);
  std::string text = buffer;
  if (text.front() == '-' && text.find_first_not_of("-0.") == std::string::npos) text.erase(0, 1);
  return text;
}

namespace {

void append_number(double value, std::string& out) {
  if (!std::isfinite(value)) {
    out += "null";
    return;
  }
  // std::chars_format::fixed with no precision: the shortest fixed-notation text that round-trips.
  char buffer[400];
  auto result = std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::fixed);
  out.append(buffer, result.ptr);
}

void append_json(const json::value& value, std::string& out) {
  switch (value.kind()) {
    case json::kind::double_: append_number(value.get_double(), out); break;
    case json::kind::object: {
      out += '{';
      bool first = true;
      for (const auto& entry : value.get_object()) {
        if (!first) out += ',';
        first = false;
        out += json::serialize(json::string(entry.key()));
        out += ':';
        append_json(entry.value(), out);
      }
      out += '}';
      break;
    }
    case json::kind::array: {
      out += '[';
      bool first = true;
      for (const auto& element : value.get_array()) {
        if (!first) out += ',';
        first = false;
        append_json(element, out);
      }
      out += ']';
      break;
    }
    default: out += json::serialize(value); break;
  }
}

}  // namespace

std::string json_text(const json::value& value) {
  std::string out;
  append_json(value, out);
  return out;
}

json::value json_number(const std::optional<double>& value) {
  if (!value) return nullptr;
  return *value;
}

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string csv_field(std::string_view text) {
  if (text.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(text);
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string rate_bound_text(std::size_t k, std::size_t n) {
  auto upper = clopper_pearson_upper(k, n);
  if (!upper) return "—";
  double percent = *upper * 100;
  return "≤ " + fixed(percent, percent < 1 ? 2 : 1) + " %";
}

}  // namespace retrace::report
