#include "base/prometheus.hpp"

#include <charconv>
#include <cmath>

namespace retrace {

namespace {

// `escape_quote`: label values escape '"' too; HELP text does not.
void append_escaped(std::string& out, std::string_view text, bool escape_quote) {
  for (char c : text) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else if (c == '"' && escape_quote) out += "\\\"";
    else out += c;
  }
}

}  // namespace

void PrometheusText::family(std::string_view name, std::string_view type, std::string_view help) {
  text_ += "# HELP ";
  text_ += name;
  text_ += ' ';
  append_escaped(text_, help, false);
  text_ += "\n# TYPE ";
  text_ += name;
  text_ += ' ';
  text_ += type;
  text_ += '\n';
}

void PrometheusText::series(std::string_view name, std::initializer_list<Label> labels) {
  text_ += name;
  if (labels.size() > 0) {
    char separator = '{';
    for (const auto& label : labels) {
      text_ += separator;
      text_ += label.name;
      text_ += "=\"";
      append_escaped(text_, label.value, true);
      text_ += '"';
      separator = ',';
    }
    text_ += '}';
  }
  text_ += ' ';
}

void PrometheusText::sample(std::string_view name, std::initializer_list<Label> labels, std::uint64_t value) {
  series(name, labels);
  char digits[24];
  auto end = std::to_chars(digits, digits + sizeof digits, value).ptr;
  text_.append(digits, end);
  text_ += '\n';
}

void PrometheusText::sample(std::string_view name, std::initializer_list<Label> labels, double value) {
  series(name, labels);
  if (std::isnan(value)) {
    text_ += "NaN";
  } else if (std::isinf(value)) {
    text_ += value > 0 ? "+Inf" : "-Inf";
  } else {
    char digits[32];
    auto end = std::to_chars(digits, digits + sizeof digits, value).ptr;
    text_.append(digits, end);
  }
  text_ += '\n';
}

}  // namespace retrace
