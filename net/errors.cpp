#include "net/errors.hpp"

#include <boost/asio/error.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/http/error.hpp>

namespace retrace::net {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using error_code = boost::system::error_code;

std::string_view to_string(Phase phase) {
  switch (phase) {
    case Phase::resolve: return "resolve";
    case Phase::connect: return "connect";
    case Phase::tls_handshake: return "tls handshake";
    case Phase::write_request: return "write request";
    case Phase::read_header: return "read response header";
    case Phase::read_body: return "read response body";
  }
  return "?";
}

ErrorKind classify(const boost::system::error_code& ec, Phase phase) {
  if (!ec) return ErrorKind::none;
  if (ec == beast::error::timeout || ec == asio::error::timed_out) return ErrorKind::timeout;
  if (ec == asio::error::operation_aborted) return ErrorKind::cut;
  if (phase == Phase::resolve || phase == Phase::connect) return ErrorKind::connect;
  if (phase == Phase::tls_handshake) return ErrorKind::tls;
  // A TLS peer that closes without close_notify mid-body is a reset, like a TCP RST.
  if (ec == asio::ssl::error::stream_truncated) return ErrorKind::reset;
  if (ec.category() == asio::error::get_ssl_category()) return ErrorKind::tls;
  if (ec == http::error::end_of_stream || ec == http::error::partial_message ||
      ec == asio::error::eof || ec == asio::error::connection_reset ||
      ec == asio::error::connection_aborted || ec == asio::error::broken_pipe ||
      ec == asio::error::not_connected || ec == asio::error::shut_down)
    return ErrorKind::reset;
  if (ec.category() == error_code(http::error::bad_version).category())
    return ErrorKind::protocol;
  return ec.category() == boost::system::system_category() ? ErrorKind::reset
                                                            : ErrorKind::protocol;
}

std::string describe(const boost::system::error_code& ec, Phase phase, std::string_view upstream) {
  std::string text = ec.message();
  if (ec == http::error::end_of_stream || ec == asio::error::eof)
    text = "upstream closed the connection";
  else if (ec == http::error::partial_message)
    text = "upstream closed the connection in the middle of the response";
  else if (ec == beast::error::timeout)
    text = "upstream did not answer within the timeout (record: --upstream-timeout; replay: --timeout)";
  return text + " (" + std::string(to_string(phase)) + ", upstream " + std::string(upstream) + ")";
}

}  // namespace retrace::net
