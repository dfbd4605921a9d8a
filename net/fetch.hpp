// One GET with a timeout, made before a run starts: what a server says about itself (/v1/models,
// /metrics) goes into a trace header. Record and replay both ask through this. post_json is the
// same for one POST of a JSON body (import asks a target's /tokenize through it).
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/ssl/context.hpp>

#include "format/trace.hpp"
#include "net/url.hpp"

namespace retrace::net {

struct Fetched {
  int status = 0;      // 0 when no response arrived; `error` says why
  std::string body;
  std::string server;  // the Server header, "" when absent
  std::string error;   // describe()'s text for the failure, "" when a response arrived
  bool connected = false;  // the connection (and TLS handshake) succeeded: something listens
};

// GET `path` (joined to the url's base path) on a fresh connection: connecting within `timeout`,
// then writing and reading within `timeout` again. A body over `body_limit` bytes is a failure.
// Blocks: it runs an io_context of its own. `tls` must be non-null for an https:// url. `headers`
// are added to the request (a hosted API wants its key for /v1/models too). Every request carries
// X-Retrace-Probe: 1 (net/http_rules.hpp): none of them is trace traffic.
Fetched fetch(const Url& url, const std::shared_ptr<boost::asio::ssl::context>& tls,
              std::string_view path, std::chrono::steady_clock::duration timeout,
              std::size_t body_limit, const std::vector<HttpHeader>& headers = {});

// POST `body` as application/json to `path`, otherwise as fetch().
Fetched post_json(const Url& url, const std::shared_ptr<boost::asio::ssl::context>& tls,
                  std::string_view path, std::string body,
                  std::chrono::steady_clock::duration timeout, std::size_t body_limit);

}  // namespace retrace::net
