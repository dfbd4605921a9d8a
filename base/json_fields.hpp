// Typed, tolerant access to the fields of a JSON object (Boost.JSON): a field that is absent or
// of another type reads as absent (nullopt, nullptr, false), never as an error. Meant for reading
// what servers and clients send, where a field of an unexpected type is to be skipped, not
// trusted; a caller that must reject bad input checks the absent case and says so itself.
//
// A JSON `null` is a value here, not an absence: field() returns it, and the typed accessors read
// it as absent because it is not of their type.
//
// Inline on purpose: the decoder calls these for every field of every event.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <string_view>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/string.hpp>
#include <boost/json/value.hpp>

namespace retrace::llm {

// The value of `key`, or nullptr when absent.
inline const boost::json::value* field(const boost::json::object& object, std::string_view key) {
  return object.if_contains(key);
}
inline const boost::json::object* object_field(const boost::json::object& object, std::string_view key) {
  const boost::json::value* value = object.if_contains(key);
  return value ? value->if_object() : nullptr;
}
inline const boost::json::array* array_field(const boost::json::object& object, std::string_view key) {
  const boost::json::value* value = object.if_contains(key);
  return value ? value->if_array() : nullptr;
}
// A view into `object`: valid as long as it is.
inline std::optional<std::string_view> string_field(const boost::json::object& object, std::string_view key) {
  const boost::json::value* value = object.if_contains(key);
  if (!value) return std::nullopt;
  if (const boost::json::string* text = value->if_string()) return std::string_view(*text);
  return std::nullopt;
}
// True only for the JSON literal `true`.
inline bool bool_field(const boost::json::object& object, std::string_view key) {
  const boost::json::value* value = object.if_contains(key);
  return value && value->is_bool() && value->get_bool();
}

// Any JSON number as a double.
inline std::optional<double> number_of(const boost::json::value& value) {
  if (!value.is_number()) return std::nullopt;
  boost::json::error_code ec;
  const double number = value.to_number<double>(ec);
  if (ec) return std::nullopt;
  return number;
}
inline std::optional<double> number_field(const boost::json::object& object, std::string_view key) {
  const boost::json::value* value = object.if_contains(key);
  return value ? number_of(*value) : std::nullopt;
}

// A double as integer_of() reads it: integral and below 9e15 in magnitude.
inline std::optional<std::int64_t> integral_double(double real) {
  if (std::isfinite(real) && real == std::floor(real) && std::fabs(real) < 9e15) return static_cast<std::int64_t>(real);
  return std::nullopt;
}
// An integer: an int64, a uint64 up to INT64_MAX, or a double with an integral value below 9e15
// in magnitude (some servers write counts as 12.0); nullopt for anything else.
inline std::optional<std::int64_t> integer_of(const boost::json::value& value) {
  if (const std::int64_t* integer = value.if_int64()) return *integer;
  if (const std::uint64_t* unsigned_integer = value.if_uint64()) {
    if (*unsigned_integer <= static_cast<std::uint64_t>(INT64_MAX)) return static_cast<std::int64_t>(*unsigned_integer);
    return std::nullopt;
  }
  if (const double* real = value.if_double()) return integral_double(*real);
  return std::nullopt;
}
inline std::optional<std::int64_t> integer_field(const boost::json::object& object, std::string_view key) {
  const boost::json::value* value = object.if_contains(key);
  return value ? integer_of(*value) : std::nullopt;
}

}  // namespace retrace::llm
