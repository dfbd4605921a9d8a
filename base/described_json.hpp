// JSON for plain structs described with BOOST_DESCRIBE_STRUCT, the way a record kept in a file
// needs it: written by one version, read by older and newer ones.
//
// Boost.JSON (1.81) converts described structs too, but strictly: every member must be present and
// no other key may be (error::size_mismatch), and an empty std::optional is written as null. A
// file's record grows a field at a time, so here:
// - to_json: every public member under its name, in declaration order; an empty std::optional is
//   left out (the key is absent, not null); a described member, or a vector of them, the same way
//   in turn; anything else as boost::json::value_from writes it.
// - read_json: tolerant. A key that is absent, null or of another type leaves its member as it
//   was (its default); a key the struct does not name is ignored. Numbers convert when exact
//   (2 reads as 2.0; 2.5 is not an integer), as boost::json::try_value_to does.
#pragma once

#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include <boost/describe/members.hpp>
#include <boost/describe/modifiers.hpp>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <boost/json/value_from.hpp>
#include <boost/json/value_to.hpp>
#include <boost/mp11/algorithm.hpp>

namespace retrace::described_json {

template <class T>
inline constexpr bool kDescribed = boost::describe::has_describe_members<T>::value;

template <class T>
struct is_optional : std::false_type {};
template <class T>
struct is_optional<std::optional<T>> : std::true_type {};

// A vector of described structs: an array of objects written and read the same way.
template <class T>
struct is_described_vector : std::false_type {};
template <class T, class A>
struct is_described_vector<std::vector<T, A>> : std::bool_constant<kDescribed<T>> {};

template <class T>
using public_members = boost::describe::describe_members<T, boost::describe::mod_public>;

template <class T>
boost::json::value to_json(const T& value);

template <class T>
boost::json::object to_object(const T& record) {
  boost::json::object object;
  boost::mp11::mp_for_each<public_members<T>>([&](auto member) {
    const auto& field = record.*member.pointer;
    if constexpr (is_optional<std::decay_t<decltype(field)>>::value) {
      if (field) object[member.name] = to_json(*field);
    } else {
      object[member.name] = to_json(field);
    }
  });
  return object;
}

template <class T>
boost::json::value to_json(const T& value) {
  if constexpr (kDescribed<T>) {
    return to_object(value);
  } else if constexpr (is_described_vector<T>::value) {
    boost::json::array array;
    for (const auto& element : value) array.push_back(to_json(element));
    return array;
  } else {
    return boost::json::value_from(value);
  }
}

template <class T>
void read_object(const boost::json::object& object, T& record);

// `json` into `out`; false, and `out` untouched, when `json` is null or of another type.
template <class T>
bool read_json(const boost::json::value& json, T& out) {
  if (json.is_null()) return false;
  if constexpr (is_optional<T>::value) {
    typename T::value_type inner{};
    if (!read_json(json, inner)) return false;
    out = std::move(inner);
    return true;
  } else if constexpr (kDescribed<T>) {
    const boost::json::object* object = json.if_object();
    if (!object) return false;
    read_object(*object, out);
    return true;
  } else if constexpr (is_described_vector<T>::value) {
    const boost::json::array* array = json.if_array();
    if (!array) return false;
    T elements;
    for (const auto& element : *array)
      if (!read_json(element, elements.emplace_back())) return false;
    out = std::move(elements);
    return true;
  } else {
    auto converted = boost::json::try_value_to<T>(json);
    if (!converted) return false;
    out = std::move(*converted);
    return true;
  }
}

template <class T>
void read_object(const boost::json::object& object, T& record) {
  boost::mp11::mp_for_each<public_members<T>>([&](auto member) {
    if (const boost::json::value* value = object.if_contains(member.name)) read_json(*value, record.*member.pointer);
  });
}

}  // namespace retrace::described_json
