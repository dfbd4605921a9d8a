// What of a stored request may go on an HTTP/1.1 wire: the one rule import, the trace reader and
// replay share. A trace is data anyone can edit (export, change, import); a CR or LF in a method,
// target, header name or value would end a line of the request early and start one of the
// editor's choosing — an extra header, or a second request smuggled after the first.
//
//   method        an RFC 9110 token (5.6.2): letters, digits and !#$%&'*+-.^_`|~
//   target        no space and no control byte (0x00-0x1f, 0x7f)
//   header name   a token
//   header value  no control byte but HTAB (RFC 9110 5.5: obs-text, bytes 0x80-0xff, is allowed)
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "format/trace.hpp"

namespace retrace {

bool is_token(std::string_view text);
bool is_wire_target(std::string_view target);
bool is_field_value(std::string_view value);

// "" when a request may go on the wire as it is; otherwise what may not, with the offending byte
// shown: "header 2 (X-A): its value has a control byte (0x0d at byte 1)". An empty method is
// allowed (replay sends POST for it).
std::string wire_syntax_error(std::string_view method, std::string_view target,
                              const std::vector<HttpHeader>& headers);
inline std::string wire_syntax_error(const Request& request) {
  return wire_syntax_error(request.method, request.target, request.headers);
}

}  // namespace retrace
