// JSON views of trace records, for `retrace export`, reports and tests: json_write.cpp (to_json,
// the export lines), json_read.cpp (back: header_from_json, exchange_from_json), json_bytes.cpp
// (byte fields, base64), request_summary.cpp (what a person wants to see of a request or answer).
//
// One record is one JSON object: {"header":{...}} or {"exchange":{...}}. Field names are the
// snake_case names of the structs in format/trace.hpp. Byte fields (bodies, event data, token
// bytes, and every text a trace takes from outside: header fields, methods, targets, session ids,
// label values, ...) are JSON strings when they are valid UTF-8, else {"base64":"..."}; the two
// free-text fields (error message, decode note) and label keys are UTF-8 with U+FFFD for a byte
// that is not; absent optionals and
// the trace's -1 sentinels (token ids, usage counts, first_byte_ns, end_ns) are null; numbers are
// plain decimals (base/json_text.hpp); `key` is the 32-digit hex request key; labels are an object {key: value}.
#pragma once

#include <boost/json.hpp>
#include <string>
#include <string_view>

#include "base/text.hpp"
#include "format/trace.hpp"

namespace retrace {

boost::json::object to_json(const TraceHeader& header);
boost::json::object to_json(const Exchange& exchange);

// The inverse of to_json; throws TraceError naming the field that is mistyped by its whole path
// ("choices.0.tokens.3.logprob").
// Fields that are absent keep their defaults, so hand-written JSON may omit them.
TraceHeader header_from_json(const boost::json::object& object);
void exchange_from_json(const boost::json::object& object, Exchange& out);

// A bytes field: a string when `bytes` is valid UTF-8, else {"base64": "..."}.
boost::json::value bytes_to_json(std::string_view bytes);
// Throws TraceError when `value` is neither form; `field` names it in the message.
std::string bytes_from_json(const boost::json::value& value, std::string_view field);

std::string base64_encode(std::string_view bytes);
std::optional<std::string> base64_decode(std::string_view text);

// What a person wants to see of a request: the last user message (chat) or the prompt
// (completions), else the body itself; cut to `max_chars` bytes (at a UTF-8 boundary) with "…".
std::string request_summary(const Request& request, std::size_t max_chars = 200);
// A choice's output: its token bytes concatenated.
std::string output_text(const Choice& choice);

// The whole line `retrace export` prints (no trailing newline).
std::string header_line(const TraceHeader& header);
std::string exchange_line(const Exchange& exchange);

}  // namespace retrace
