// Typed access to the fields of a JSON object (Boost.JSON), the one way every module reads them,
// in two flavours:
// - tolerant (the free functions): a field that is absent or of another type reads as absent
//   (nullopt, nullptr, false), never as an error. For what servers and clients send, where a
//   field of an unexpected type is to be skipped, not trusted. A JSON `null` is a value here, not
//   an absence: field() returns it, and the typed accessors read it as absent because it is not
//   of their type.
// - strict (StrictFields, below): for JSON that must be right; a mistyped field throws FieldError
//   naming where it is.
//
// Inline on purpose: the decoder calls these for every field of every event.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/string.hpp>
#include <boost/json/value.hpp>

namespace retrace {

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


// ---------------------------------------------------------------------------------------------
// The strict flavour, for JSON that must be right because retrace wrote it or a user must fix it
// (a trace's JSON view, plan.json, study.json): a field of another type throws FieldError naming
// where it is and what it should be, "plan.json: field \"repeats\": expected an integer". An
// absent field (or a JSON null) reads as absent (nullopt, nullptr), or throws FieldError "missing
// field" when the accessor is told the field is required.

class FieldError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class Presence : bool { optional, required };

class StrictFields {
 public:
  // `where` is put before every message ("plan.json"; "" for none); `path` is the object's place
  // in its document ("response", "choices.2"), put before the field's name.
  explicit StrictFields(const boost::json::object& object, std::string where = {},
                        std::string path = {})
      : object_(object), where_(std::move(where)), path_(std::move(path)) {}

  const boost::json::object& object() const { return object_; }
  // The fields of `object`, the value of this object's field `key` (or its array's item `key`).
  StrictFields nested(const boost::json::object& object, std::string_view key) const {
    return StrictFields(object, where_, name(key));
  }

  // nullptr when absent or null (FieldError when `presence` is required).
  const boost::json::value* find(std::string_view key, Presence presence = Presence::optional) const {
    const boost::json::value* value = object_.if_contains(key);
    if (value && !value->is_null()) return value;
    if (presence == Presence::required) throw FieldError(prefix() + "missing field \"" + name(key) + "\"");
    return nullptr;
  }

  std::optional<std::string_view> string(std::string_view key, Presence presence = Presence::optional) const {
    const boost::json::value* value = find(key, presence);
    if (!value) return std::nullopt;
    if (!value->is_string()) mistyped(key, "a string");
    return std::string_view(value->get_string());
  }
  // An integer that fits in Int: a JSON integer (not 12.0: what retrace writes has no fraction).
  template <class Int>
  std::optional<Int> integer(std::string_view key, Presence presence = Presence::optional) const {
    const boost::json::value* value = find(key, presence);
    if (!value) return std::nullopt;
    if (const std::int64_t* number = value->if_int64(); number && std::in_range<Int>(*number))
      return static_cast<Int>(*number);
    if (const std::uint64_t* number = value->if_uint64(); number && std::in_range<Int>(*number))
      return static_cast<Int>(*number);
    mistyped(key, value->is_int64() || value->is_uint64() ? "an integer that fits" : "an integer");
  }
  std::optional<double> number(std::string_view key, Presence presence = Presence::optional) const {
    const boost::json::value* value = find(key, presence);
    if (!value) return std::nullopt;
    if (!value->is_number()) mistyped(key, "a number");
    return value->to_number<double>();
  }
  std::optional<bool> boolean(std::string_view key, Presence presence = Presence::optional) const {
    const boost::json::value* value = find(key, presence);
    if (!value) return std::nullopt;
    if (!value->is_bool()) mistyped(key, "true or false");
    return value->get_bool();
  }
  const boost::json::object* object(std::string_view key, Presence presence = Presence::optional) const {
    const boost::json::value* value = find(key, presence);
    if (!value) return nullptr;
    if (!value->is_object()) mistyped(key, "an object");
    return &value->get_object();
  }
  const boost::json::array* array(std::string_view key, Presence presence = Presence::optional) const {
    const boost::json::value* value = find(key, presence);
    if (!value) return nullptr;
    if (!value->is_array()) mistyped(key, "an array");
    return &value->get_array();
  }

  // Throws FieldError: field `key` (its whole path) is not `expected`.
  [[noreturn]] void mistyped(std::string_view key, std::string_view expected) const {
    throw FieldError(prefix() + "field \"" + name(key) + "\": expected " + std::string(expected));
  }
  std::string name(std::string_view key) const {
    return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
  }

 private:
  std::string prefix() const { return where_.empty() ? std::string() : where_ + ": "; }

  const boost::json::object& object_;
  std::string where_, path_;
};

}  // namespace retrace

namespace retrace::llm {  // the names the decoder has always used
using retrace::array_field;
using retrace::bool_field;
using retrace::field;
using retrace::integer_field;
using retrace::integer_of;
using retrace::integral_double;
using retrace::number_field;
using retrace::number_of;
using retrace::object_field;
using retrace::string_field;
}  // namespace retrace::llm
