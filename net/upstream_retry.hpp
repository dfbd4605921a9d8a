// The rules record's proxy and shadow's mirrors share for a request to an upstream on a pooled
// connection: when it may go again on a fresh connection, and how large a response header may be.
#pragma once

#include <cstddef>

#include <boost/beast/core/error.hpp>

namespace retrace::net {

// A connection taken from the pool may have been closed by the upstream while idle: a request that
// fails on it before any response byte goes once more on a fresh connection; never a second time,
// never after the exchange was cut, never after a timeout (the upstream is slow, not gone).
inline bool may_retry_on_fresh_connection(bool reused, bool retried, bool cut,
                                          const boost::system::error_code& ec) {
  return reused && !retried && !cut && ec != boost::beast::error::timeout;
}

// The most bytes of a response's header read from an upstream (a bigger one is an error).
inline constexpr std::size_t kUpstreamResponseHeaderLimit = 256u << 10;

}  // namespace retrace::net
