// The one rule for writing back a JSON request body that was parsed, edited as an object, and is
// to reach the server keeping as much of the client's bytes as it can (replay's request body, the
// llm/ request-side edits, --set/--unset).
//
// An edit reports what it did to the object: nothing, only added members at its top level (they
// go to the object's end, after the members it was parsed with), or changed what was there (a
// value replaced, a member erased, something nested in an existing member changed). The body is
// then written as:
//   none     the original bytes, untouched;
//   added    the original bytes with the new members appended before the closing brace, so the
//            client's number spellings, key order, spacing and escapes reach the server as sent;
//   changed  the object serialised (its key order kept).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

namespace retrace {

enum class JsonEdit : std::uint8_t { none, added, changed };  // ordered: a later kind subsumes

// Two edits on one object: what they did together.
inline JsonEdit& operator|=(JsonEdit& done, JsonEdit more) {
  if (more > done) done = more;
  return done;
}

// object[key] = value, reported: none when the member already holds an equal value, added when it
// was absent, changed otherwise.
JsonEdit set_member(boost::json::object& object, std::string_view key, boost::json::value value);

// The body to send after edits that left `edited` as `edit` says, `edited` having been parsed
// from `original` with `original_members` top-level members.
std::string write_edited(std::string_view original, const boost::json::object& edited,
                         std::size_t original_members, JsonEdit edit);

}  // namespace retrace
