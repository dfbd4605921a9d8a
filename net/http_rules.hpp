// Which header fields belong to one connection rather than to the message: the one rule record
// (forwarding a client's request upstream) and replay (re-sending a recorded request) share.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/ascii.hpp"

namespace retrace::net {

// A header value without its leading and trailing spaces and tabs (RFC 9110 5.6.3, OWS): the one
// trim (base/ascii.hpp), under HTTP's name.
inline std::string_view trim_ows(std::string_view value) { return trim(value); }
// The items of a comma-separated header value (RFC 9110 5.6.1), trimmed, empty ones left out:
// " gzip, , br;q=0.5" gives "gzip" and "br;q=0.5".
std::vector<std::string_view> list_items(std::string_view value);

// Hop-by-hop fields (RFC 9110 7.6.1) are never forwarded: Connection, Proxy-Connection,
// Keep-Alive, TE, Transfer-Encoding, Upgrade, Trailer, and every field the message's Connection
// header names (`Connection: close, X-Trace` makes X-Trace hop-by-hop). Host and Content-Length
// are also never copied: each is set anew for the new connection and body. Expect is not copied:
// whoever forwards holds the whole body already (record answers a client's 100-continue itself).
// Names compare case-insensitively.
class HopByHop {
 public:
  // `connection` is the value of the message's Connection header ("" when it has none).
  explicit HopByHop(std::string_view connection = {});
  bool operator()(std::string_view name) const;

 private:
  std::vector<std::string> named_;  // fields the Connection header names
};

// A response's `Keep-Alive: timeout=5, max=100` (RFC 2068 19.7.1.1, still sent by cpp-httplib,
// Apache and nginx): how long the server keeps an idle connection and how many requests it
// serves on one. Unknown parameters and malformed values are ignored.
struct KeepAlive {
  std::optional<std::chrono::seconds> timeout;
  std::optional<std::uint64_t> max;
};
KeepAlive parse_keep_alive(std::string_view value);

// Marks a request retrace sends that is not trace traffic: replay's, sweep's, study's and
// bisect's preflight identification (GET /v1/models, /version, /props, ...), their scrapes of
// /metrics, study's cache flushes, unmeasured warm-ups, record's own readiness probe. `retrace
// record` forwards such a request but keeps it out of the trace (counted as the outcome `probe`),
// so a recording of a replay holds the replay's traffic only. Every fetch() and post_json() sends
// it; replay's warm-up requests add it to their head.
inline constexpr std::string_view kProbeHeader = "X-Retrace-Probe";
inline constexpr std::string_view kProbeHeaderValue = "1";

}  // namespace retrace::net
