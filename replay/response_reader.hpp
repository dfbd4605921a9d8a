// Internal to replay/: reading an HTTP response a part at a time on an upstream connection, as a
// worker reads a token stream: the head, then whatever of the body has arrived, each part as soon
// as it is here. (In replay/, not net/: clang-14, which builds net/ for the fuzz targets under
// ASan + UBSan, fails on this coroutine there: "Cannot represent a difference across sections".)
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <boost/asio/awaitable.hpp>
#include <boost/beast/core/buffers_range.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>

#include "net/arrived_blocks.hpp"
#include "net/connection.hpp"

namespace retrace::replay {

// A Beast body that puts the parser's body bytes straight into an ArrivedBody, from the
// connection's read buffer: one copy of each byte, where a buffer_body's bytes were copied into
// a read buffer and from there into the body (bench/RESULTS.md, "zcopy"). The bytes only:
// the caller marks each read's `taken` bytes with their arrival (ArrivedBody::mark_read) and
// resets it. Past `limit` bytes in all (--max-response-bytes) the body keeps what fits, sets
// `past_limit` and stops the parser with body_limit.
struct ArrivedHttpBody {
  struct value_type {
    net::ArrivedBody* body = nullptr;  // set before the body's first byte
    std::size_t limit = SIZE_MAX;
    std::size_t taken = 0;  // bytes put in since the caller last marked them
    bool past_limit = false;
  };
  class reader {
   public:
    template <bool isRequest, class Fields>
    reader(boost::beast::http::header<isRequest, Fields>&, value_type& value) : value_(value) {}
    // A Content-Length (within the limit) reserves the body's raw tail once: no doubling copy.
    void init(const boost::optional<std::uint64_t>& length, net::error_code& ec) {
      ec = value_.body ? net::error_code() : boost::beast::http::error::bad_transfer_encoding;
      if (value_.body && length) value_.body->reserve_known(std::min<std::uint64_t>(*length, value_.limit));
    }
    template <class ConstBufferSequence>
    std::size_t put(const ConstBufferSequence& buffers, net::error_code& ec) {
      ec = {};
      std::size_t put = 0;
      for (auto buffer : boost::beast::buffers_range_ref(buffers)) {
        std::string_view piece(static_cast<const char*>(buffer.data()), buffer.size());
        value_.past_limit = !value_.body->add_bytes_within(piece, value_.limit);
        value_.taken += piece.size();
        put += piece.size();
        if (value_.past_limit) {
          ec = boost::beast::http::error::body_limit;
          break;
        }
      }
      return put;
    }
    void finish(net::error_code& ec) { ec = {}; }

   private:
    value_type& value_;
  };
};
using ArrivedPartParser = boost::beast::http::response_parser<ArrivedHttpBody>;

// Parses what `connection` has buffered, reading its socket only when the parser needs more
// bytes, until the head is parsed (`head_only`) or, after it, until some body has gone into the
// parser's ArrivedBody or the response is complete: every chunk already buffered goes in at once
// (a token stream is one chunk per token), and body bytes that precede a chunk header still on
// its way are handed over without waiting for it. Returns end_of_stream when the connection
// ended before any byte of the response, body_limit past the body's `limit`, and the read's or
// the parser's error otherwise.
//
// What Beast's async_read_header and async_read_some do, without their composed operations and
// their trip through the io_context for bytes already buffered; and async_read_header leaves the
// parser not eager, which made every chunk of a stream a read of its own (bench/RESULTS.md,
// session 10).
// A plain connection is read from its socket: its tcp_stream's expiry (expires_after) does not
// apply; the worker's watchdog closes a connection that stalls.
boost::asio::awaitable<net::error_code> read_response_part(net::UpstreamConnection& connection,
                                                           ArrivedPartParser& parser, bool head_only);

}  // namespace retrace::replay
