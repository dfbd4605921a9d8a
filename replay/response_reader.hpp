// Internal to replay/: reading an HTTP response a part at a time on an upstream connection, as a
// worker reads a token stream: the head, then whatever of the body has arrived, each part as soon
// as it is here. (In replay/, not net/: clang-14, which builds net/ for the fuzz targets under
// ASan + UBSan, fails on this coroutine there: "Cannot represent a difference across sections".)
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/parser.hpp>

#include "net/connection.hpp"

namespace retrace::replay {

using ResponsePartParser = boost::beast::http::response_parser<boost::beast::http::buffer_body>;

// Parses what `connection` has buffered, reading its socket only when the parser needs more
// bytes, until the head is parsed (`head_only`; no body buffer is needed for it) or, after it,
// until some body has gone into the parser's body buffer or the response is complete: every
// chunk already buffered goes in at once (a token stream is one chunk per token), and body bytes
// that precede a chunk header still on its way are handed over without waiting for it. Returns
// Beast's need_buffer when the body buffer is full, end_of_stream when the connection ended
// before any byte of the response, and the read's or the parser's error otherwise.
//
// What Beast's async_read_header and async_read_some do, without their composed operations and
// their trip through the io_context for bytes already buffered; and async_read_header leaves the
// parser not eager, which made every chunk of a stream a read of its own (bench/RESULTS.md,
// session 10).
boost::asio::awaitable<net::error_code> read_response_part(net::UpstreamConnection& connection,
                                                           ResponsePartParser& parser, bool head_only);

}  // namespace retrace::replay
