// `retrace cat`'s views of one exchange: text for a person (long texts cut at kCatShownBytes,
// never inside a character) and the same as JSON with the full texts; and the JSON document's
// opening and closing, so the command streams exchanges between them as it reads them.
#pragma once

#include <boost/json/object.hpp>
#include <cstddef>
#include <ostream>
#include <string>

#include "format/trace.hpp"

namespace retrace::report {

// Long texts in the text view are cut (printable, base/text.hpp) at this many bytes.
inline constexpr std::size_t kCatShownBytes = 400;

// "#ID  METHOD TARGET  status S ..." and the request, choices, output tokens and expected answer.
void write_exchange_text(const Exchange& exchange, std::ostream& out);
// What write_exchange_text shows, with the full texts (no cut, no escapes).
boost::json::object exchange_view_json(const Exchange& exchange);

// {"schema_version":N,"trace":PATH,"exchanges":[ ... ],"torn":BOOL} and a newline, in two halves.
std::string cat_json_opening(const std::string& path);
std::string cat_json_closing(bool torn);

}  // namespace retrace::report
