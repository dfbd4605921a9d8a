// Network errors, sorted into the categories a trace records (format/trace.hpp ErrorKind).
//
// The same error code means different things at different moments: `eof` while connecting is a
// refused connection, while reading a body it is a reset. So classification takes the phase of the
// exchange the error happened in.
#pragma once

#include <string>
#include <string_view>

#include <boost/system/error_code.hpp>

#include "format/trace.hpp"

namespace retrace::net {

enum class Phase : std::uint8_t {
  resolve,        // name lookup of the upstream
  connect,        // TCP connect
  tls_handshake,  // TLS handshake (SNI, certificate verification)
  write_request,  // sending the request
  read_header,    // waiting for / reading the response status line and headers
  read_body,      // reading the response body
};

std::string_view to_string(Phase phase);

// connect, tls, timeout, reset or protocol; `cut` for operation_aborted (we cancelled it
// ourselves); `none` for a success code.
ErrorKind classify(const boost::system::error_code& ec, Phase phase);

// "connect: Connection refused (while connecting to 127.0.0.1:8000)"-style text for traces and
// error bodies.
std::string describe(const boost::system::error_code& ec, Phase phase, std::string_view upstream);

}  // namespace retrace::net
