// See replay/response_reader.hpp.
#include "replay/response_reader.hpp"

#include <algorithm>
#include <cstddef>
#include <tuple>
#include <type_traits>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/http/error.hpp>

#include "net/drained_read.hpp"

namespace retrace::replay {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using net::error_code;

namespace response_reader_detail {

bool put_buffered(boost::beast::flat_buffer& buffer, ArrivedPartParser& parser, bool head_only, error_code& ec) {
  if (buffer.size() == 0) return false;
  const std::size_t taken = parser.get().body().taken;
  buffer.consume(parser.put(buffer.data(), ec));
  if (ec != http::error::need_more) return true;  // a part, past the limit, or an error
  ec = {};
  return !head_only && parser.get().body().taken > taken;
}

std::size_t read_room(const boost::beast::flat_buffer& buffer) {
  // Sized as Beast sizes a read: the buffer's free room, at least 512 bytes, at most 64 KiB.
  auto size = buffer.size();
  return std::min(std::max<std::size_t>(512, buffer.capacity() - size),
                  std::min<std::size_t>(64 * 1024, buffer.max_size() - size));
}

bool read_ended(ArrivedPartParser& parser, error_code& ec) {
  if (ec == asio::error::eof) {
    // Before any byte of the response, the connection was closed under us (a stale keep-alive
    // one); after some, a response without a length ends where the connection does.
    if (!parser.got_some()) {
      ec = http::error::end_of_stream;
      return true;
    }
    ec = {};
    parser.put_eof(ec);
    return true;
  }
  return bool(ec);
}

}  // namespace response_reader_detail

asio::awaitable<error_code> read_response_part(net::UpstreamConnection& connection,
                                               ArrivedPartParser& parser, bool head_only) {
  using namespace response_reader_detail;
  auto& buffer = connection.buffer();
  parser.eager(!head_only);
  error_code ec;
  for (;;) {
    if (put_buffered(buffer, parser, head_only, ec)) co_return ec;
    auto want = read_room(buffer);
    if (want == 0) co_return http::error::buffer_overflow;
    std::size_t got = 0;
    std::tie(ec, got) = co_await connection.visit([&](auto& stream) {
      if constexpr (std::is_same_v<std::decay_t<decltype(stream)>, boost::beast::tcp_stream>)
        return net::async_read_drained(stream.socket(), buffer.prepare(want), asio::as_tuple(asio::use_awaitable));
      else
        return stream.async_read_some(buffer.prepare(want), asio::as_tuple(asio::use_awaitable));
    });
    buffer.commit(got);
    if (read_ended(parser, ec)) co_return ec;
  }
}

}  // namespace retrace::replay
