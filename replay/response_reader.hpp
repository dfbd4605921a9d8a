// Internal to replay/: reading an HTTP response a part at a time on an upstream connection, as a
// worker reads a token stream: the head, then whatever of the body has arrived, each part as soon
// as it is here. (In replay/, not net/: clang-14, which builds net/ for the fuzz targets under
// ASan + UBSan, fails on this coroutine there: "Cannot represent a difference across sections".)
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <tuple>
#include <type_traits>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/buffers_range.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>

#include "net/arrived_blocks.hpp"
#include "net/connection.hpp"
#include "net/drained_read.hpp"

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

// The steps read_response_part and read_response_body share (response_reader.cpp).
namespace response_reader_detail {
// Puts what `buffer` holds into `parser`: true when that ends a part (`ec` as read_response_part
// returns it), false when the parser needs more bytes.
bool put_buffered(boost::beast::flat_buffer& buffer, ArrivedPartParser& parser, bool head_only,
                  net::error_code& ec);
// The size of the next socket read (0: the buffer is full).
std::size_t read_room(const boost::beast::flat_buffer& buffer);
// After a read that committed its bytes: true when it ends a part, `ec` then as read_response_part
// returns it (end of stream before any byte, a response without a length ended, the read's error).
bool read_ended(ArrivedPartParser& parser, net::error_code& ec);
}  // namespace response_reader_detail

// The body after read_response_part's head, to its end or its first error, which it returns:
// every part as read_response_part(..., false) would return it is handed to `on_part(ec)` first.
// One coroutine frame for the whole body, where a co_await of read_response_part a part cost a
// frame of its own, its switch and an executor copy; and the connection's stream looked up once,
// not a std::visit a read. A plain socket's read is co_awaited as a deferred operation (Asio's
// awaitable_async_op: the handler writes the result into the awaiting frame), not through
// use_awaitable, whose initiate is a coroutine of its own, a frame allocated and freed a read.
template <class OnPart>
boost::asio::awaitable<net::error_code> read_response_body(net::UpstreamConnection& connection,
                                                          ArrivedPartParser& parser, OnPart on_part) {
  namespace asio = boost::asio;
  using namespace response_reader_detail;
  auto& buffer = connection.buffer();
  parser.eager(true);
  // Plain TCP is read from the socket itself: Beast's tcp_stream wraps each read in an operation
  // of its own (an allocation, executor copies) for a timeout the worker never sets here; and
  // without first trying a socket the last read drained (net/drained_read.hpp).
  auto* plain = connection.visit([](auto& stream) {
    if constexpr (std::is_same_v<std::decay_t<decltype(stream)>, boost::beast::tcp_stream>)
      return &stream.socket();
    else
      return static_cast<boost::beast::tcp_stream::socket_type*>(nullptr);
  });
  net::error_code ec;
  while (!parser.is_done() && !ec) {
    if (!put_buffered(buffer, parser, false, ec)) {
      auto want = read_room(buffer);
      if (want == 0) {
        ec = boost::beast::http::error::buffer_overflow;
      } else {
        std::size_t got = 0;
        if (plain)
          std::tie(ec, got) =
              co_await net::async_read_drained(*plain, buffer.prepare(want), asio::as_tuple(asio::deferred));
        else
          std::tie(ec, got) = co_await connection.visit([&](auto& stream) {
            return stream.async_read_some(buffer.prepare(want), asio::as_tuple(asio::use_awaitable));
          });
        buffer.commit(got);
        if (!read_ended(parser, ec)) continue;
      }
    }
    on_part(ec);
  }
  co_return ec;
}

}  // namespace retrace::replay
