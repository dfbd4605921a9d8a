// URLs of upstreams and targets: http://host[:port][/base] and https://...
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace retrace::net {

struct Url {
  std::string scheme;  // "http" or "https"
  std::string host;    // without brackets for IPv6 literals
  std::uint16_t port = 0;
  std::string base_path;  // "" or "/prefix" without a trailing slash

  bool tls() const { return scheme == "https"; }
  // "host:port" as the Host header wants it (default ports omitted, IPv6 bracketed).
  std::string host_header() const;
  // The URL again, normalised: scheme://host:port/base
  std::string str() const;
  // base_path + target, where target starts with '/'.
  std::string join(std::string_view target) const;
};

// Throws std::invalid_argument naming what is wrong ("missing scheme: try http://...").
Url parse_url(std::string_view text);

// Splits "HOST:PORT" (or "[v6]:PORT", or ":PORT" meaning 127.0.0.1) for --listen.
struct ListenAddress {
  std::string host;
  std::uint16_t port = 0;
};
ListenAddress parse_listen(std::string_view text);

}  // namespace retrace::net
