// Internal to net/fetch.cpp and net/kept_get.cpp: one request written on a connected connection
// and its answer read into a Fetched, the one way both do it. The handlers run inside the
// caller's io_context.run(); every argument outlives it.
#pragma once

#include <chrono>
#include <functional>

#include <boost/beast/http.hpp>

#include "net/connection.hpp"
#include "net/fetch.hpp"

namespace retrace::net::detail {

namespace http = boost::beast::http;

// Writes `request` and reads the answer with `parser` within `timeout`; then sets `result`'s
// status, Server header and body (or its error, naming `url`) and calls `done(keep_alive)`
// (`done(false)` after an error).
void start_exchange(UpstreamConnection& connection, const http::request<http::string_body>& request,
                    http::response_parser<http::string_body>& parser,
                    std::chrono::steady_clock::duration timeout, const Url& url, Fetched& result,
                    std::function<void(bool keep_alive)> done);

}  // namespace retrace::net::detail
