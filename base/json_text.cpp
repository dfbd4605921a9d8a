#include "base/json_text.hpp"

#include <charconv>
#include <cmath>

#include <boost/json.hpp>

namespace retrace {

namespace json = boost::json;

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

json::value json_float(float value) {
  if (!std::isfinite(value)) return nullptr;
  char buffer[64];
  auto end = std::to_chars(buffer, buffer + sizeof buffer, value).ptr;
  double shortest = 0;
  std::from_chars(buffer, end, shortest);
  return shortest;
}

json::value json_count(std::int64_t value) {
  if (value < 0) return nullptr;
  return value;
}

}  // namespace retrace
