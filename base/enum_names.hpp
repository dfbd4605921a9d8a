// Enum <-> name for the enums whose name in traces, JSON, reports and on the command line is the
// enumerator's own spelling: the enum is described once (BOOST_DESCRIBE_ENUM, beside its
// declaration) and these templates serve them all, so a new enumerator is named, parsed and
// counted everywhere at once instead of in a switch and a list per enum. Enums whose names are
// prose ("read response header") keep their own switch.
#pragma once

#include <boost/describe/enum.hpp>
#include <boost/describe/enumerators.hpp>
#include <boost/mp11/algorithm.hpp>
#include <cstddef>
#include <optional>
#include <string_view>

namespace retrace {

// The enumerator's name; `unknown` for a value outside the enum (a newer writer's kind).
template <class E>
std::string_view enum_name(E value, std::string_view unknown = "unknown") {
  std::string_view name = unknown;
  boost::mp11::mp_for_each<boost::describe::describe_enumerators<E>>([&](auto descriptor) {
    if (value == descriptor.value) name = descriptor.name;
  });
  return name;
}

// The enumerator named exactly `name`; nullopt when none is.
template <class E>
std::optional<E> enum_from_name(std::string_view name) {
  std::optional<E> found;
  boost::mp11::mp_for_each<boost::describe::describe_enumerators<E>>([&](auto descriptor) {
    if (name == descriptor.name) found = descriptor.value;
  });
  return found;
}

// How many enumerators E has: the size of an array indexed by an enum numbered 0, 1, 2, ...
template <class E>
inline constexpr std::size_t enum_count = boost::mp11::mp_size<boost::describe::describe_enumerators<E>>::value;

}  // namespace retrace
