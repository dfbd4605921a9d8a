#include "report/text.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include <boost/json.hpp>

#include "metrics/statistics.hpp"

namespace retrace::report {

namespace json = boost::json;

std::string fixed(double value, int digits) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", digits, value);
  std::string text = buffer;
  if (text.front() == '-' && text.find_first_not_of("-0.") == std::string::npos) text.erase(0, 1);
  return text;
}

double rounded(double value, int digits) {
  const double scale = std::pow(10.0, digits);
  return std::round(value * scale) / scale;
}

std::string thousands(std::size_t count) {
  std::string digits = std::to_string(count), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
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

namespace {

// A number as a spreadsheet reads it ("-1.5", "+3", "-2e-05"): its sign starts no formula.
bool is_plain_number(std::string_view text) {
  double value = 0;
  std::size_t sign = text.size() > 1 && text[0] == '+' ? 1 : 0;
  auto [end, error] = std::from_chars(text.data() + sign, text.data() + text.size(), value);
  return error == std::errc{} && end == text.data() + text.size();
}

// OWASP's CSV injection rule: a spreadsheet runs a cell that opens with = + - @ (or a tab or CR,
// which some strip first) as a formula, and a trace's text may be anyone's.
bool opens_formula(std::string_view text) {
  return !text.empty() && std::string_view("=+-@\t\r").find(text[0]) != std::string_view::npos &&
         !is_plain_number(text);
}

}  // namespace

std::string csv_field(std::string_view text) {
  std::string guarded;
  if (opens_formula(text)) {
    guarded = "'" + std::string(text);
    text = guarded;
  }
  if (text.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(text);
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string csv_row(const std::vector<std::string>& fields) {
  std::string out;
  for (std::size_t i = 0; i < fields.size(); ++i) {
    if (i) out += ',';
    out += csv_field(fields[i]);
  }
  return out + "\r\n";
}

std::string rate_percent_text(double percent, int decimals) {
  if (!(percent > 0) || percent >= 1) return fixed(percent, decimals);
  int digits = 1 - static_cast<int>(std::floor(std::log10(percent)));
  return fixed(percent, std::clamp(digits, decimals, 12));
}

std::string rate_bound_text(std::size_t k, std::size_t n) {
  auto upper = clopper_pearson_upper(k, n);
  if (!upper) return "—";
  return "≤ " + rate_percent_text(*upper * 100) + " %";
}

}  // namespace retrace::report
