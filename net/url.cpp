#include "net/url.hpp"

#include <charconv>
#include <stdexcept>

namespace retrace::net {
namespace {

std::uint16_t parse_port(std::string_view text, std::string_view whole) {
  unsigned value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value > 65535)
    throw std::invalid_argument("bad port '" + std::string(text) + "' in '" + std::string(whole) +
                                "': expected a number from 0 to 65535");
  return static_cast<std::uint16_t>(value);
}

// Splits "host", "host:port", "[v6]", "[v6]:port".
std::pair<std::string, std::string_view> split_host_port(std::string_view authority,
                                                          std::string_view whole) {
  if (authority.starts_with('[')) {
    auto close = authority.find(']');
    if (close == std::string_view::npos)
      throw std::invalid_argument("unclosed '[' in '" + std::string(whole) + "'");
    std::string host(authority.substr(1, close - 1));
    auto rest = authority.substr(close + 1);
    if (rest.empty()) return {host, {}};
    if (rest.front() != ':')
      throw std::invalid_argument("unexpected text after ']' in '" + std::string(whole) + "'");
    return {host, rest.substr(1)};
  }
  auto colon = authority.rfind(':');
  if (colon == std::string_view::npos) return {std::string(authority), {}};
  return {std::string(authority.substr(0, colon)), authority.substr(colon + 1)};
}

}  // namespace

std::string Url::host_header() const {
  std::string h = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  bool default_port = (scheme == "http" && port == 80) || (scheme == "https" && port == 443);
  if (!default_port) h += ":" + std::to_string(port);
  return h;
}

std::string Url::str() const {
  std::string h = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  return scheme + "://" + h + ":" + std::to_string(port) + base_path;
}

std::string Url::join(std::string_view target) const {
  std::string out = base_path;
  if (target.empty() || target.front() != '/') out += '/';
  out += target;
  return out;
}

Url parse_url(std::string_view text) {
  Url url;
  auto sep = text.find("://");
  if (sep == std::string_view::npos)
    throw std::invalid_argument("missing scheme in URL '" + std::string(text) +
                                "': try http://" + std::string(text));
  url.scheme = std::string(text.substr(0, sep));
  for (auto& c : url.scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (url.scheme != "http" && url.scheme != "https")
    throw std::invalid_argument("unsupported scheme '" + url.scheme + "' in URL '" +
                                std::string(text) + "': use http:// or https://");
  auto rest = text.substr(sep + 3);
  auto slash = rest.find_first_of("/?#");
  auto authority = rest.substr(0, slash);
  if (authority.find('@') != std::string_view::npos)
    throw std::invalid_argument("credentials in URL '" + std::string(text) +
                                "' are not supported: pass them with --header or --api-key-env");
  auto [host, port] = split_host_port(authority, text);
  if (host.empty()) throw std::invalid_argument("missing host in URL '" + std::string(text) + "'");
  url.host = std::move(host);
  // "http://h:" names no port: an error, not the default.
  url.port = port.data() == nullptr ? (url.tls() ? 443 : 80) : parse_port(port, text);
  if (slash != std::string_view::npos) {
    auto path = rest.substr(slash);
    auto q = path.find_first_of("?#");
    if (q != std::string_view::npos)
      throw std::invalid_argument("URL '" + std::string(text) +
                                  "' has a query or fragment; give the server's base URL only");
    url.base_path = std::string(path);
    while (!url.base_path.empty() && url.base_path.back() == '/') url.base_path.pop_back();
  }
  return url;
}

ListenAddress parse_listen(std::string_view text) {
  auto [host, port] = split_host_port(text, text);
  if (port.data() == nullptr || port.empty())
    throw std::invalid_argument("--listen wants HOST:PORT (port 0 picks a free one), got '" +
                                std::string(text) + "'");
  ListenAddress address;
  address.host = host.empty() ? "127.0.0.1" : host;
  address.port = parse_port(port, text);
  return address;
}

}  // namespace retrace::net
