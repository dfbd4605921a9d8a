// The one wording import uses for a line that Boost.JSON would not parse.
#pragma once

#include <boost/json/error.hpp>
#include <string>

namespace retrace {

// Boost.JSON's default parser refuses values nested deeper than this; import keeps that bound (a
// row of a serving trace or a request body is a few levels deep) and says so when a row passes it.
inline constexpr int kMaxImportJsonDepth = 32;

// "not valid JSON (WHY)", or for a row nested past kMaxImportJsonDepth what the limit is: Boost's
// own "too deep" reads like a fault of the format.
inline std::string json_error_text(const boost::json::error_code& error) {
  if (error == boost::json::error::too_deep)
    return "the JSON nests objects and arrays more than " + std::to_string(kMaxImportJsonDepth) +
           " levels deep, more than import reads; flatten the row (a request body needs a few levels)";
  return "not valid JSON (" + error.message() + ")";
}

}  // namespace retrace
