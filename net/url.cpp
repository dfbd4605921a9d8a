#include "net/url.hpp"

#include <cctype>
#include <charconv>
#include <stdexcept>

#include <boost/url/parse.hpp>
#include <boost/url/url_view.hpp>

#include "base/ascii.hpp"
#include "base/text.hpp"

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

// The text in quotes for an error message, on one line (a CR or LF in a bad URL cannot break it).
std::string quoted(std::string_view text) { return "'" + printable(text) + "'"; }

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

// Parsed by Boost.URL (RFC 3986), header-only (net/url_impl.cpp compiles its sources once): it
// refuses what a hand-written split let through (spaces, control characters, bad percent-escapes,
// malformed IPv6 literals), so nothing a URL carries can break a request line or a Host header.
// The checks below only say, in our words, what retrace does not take.
Url parse_url(std::string_view text) {
  const std::string shown = quoted(text);
  auto sep = text.find("://");
  if (sep == std::string_view::npos) {
    // "http//host" or "http:/host": a scheme whose separator lost a character is suggested whole.
    std::string_view rest = text;
    auto slashes = text.find_first_of(":/");
    auto scheme = text.substr(0, slashes == std::string_view::npos ? 0 : slashes);
    if ((scheme == "http" || scheme == "https") && slashes != std::string_view::npos) {
      rest = text.substr(slashes);
      while (!rest.empty() && (rest.front() == ':' || rest.front() == '/')) rest.remove_prefix(1);
    } else {
      scheme = "http";
    }
    throw std::invalid_argument("missing scheme in URL " + shown + ": try " + std::string(scheme) +
                                "://" + std::string(rest));
  }
  auto parsed = boost::urls::parse_uri(text);
  if (!parsed) {
    auto rest = text.substr(sep + 3);
    if (rest.starts_with('[') && rest.find(']') == std::string_view::npos)
      throw std::invalid_argument("unclosed '[' in " + shown);
    throw std::invalid_argument("malformed URL " + shown + " (RFC 3986: " + parsed.error().message() +
                                "; spaces, control characters and a bare % must be percent-encoded)");
  }
  const boost::urls::url_view& u = *parsed;
  Url url;
  url.scheme = std::string(u.scheme());
  url.scheme = ascii_lower(url.scheme);
  if (url.scheme != "http" && url.scheme != "https")
    throw std::invalid_argument("unsupported scheme '" + url.scheme + "' in URL " + shown +
                                ": use http:// or https://");
  if (u.has_userinfo())
    throw std::invalid_argument("credentials in URL " + shown +
                                " are not supported: pass them with --header or --api-key-env");
  url.host = std::string(u.encoded_host_address());
  if (url.host.empty()) throw std::invalid_argument("missing host in URL " + shown);
  // "http://h:" names no port: an error, not the default.
  url.port = u.has_port() ? parse_port(u.port(), text) : (url.tls() ? 443 : 80);
  if (u.has_query() || u.has_fragment())
    throw std::invalid_argument("URL " + shown + " has a query or fragment; give the server's base URL only");
  url.base_path = std::string(u.encoded_path());
  // RFC 3986 3.3: after an authority the path is empty or starts with '/'. Boost.URL 1.81 lets
  // "http://[::1]9/x" through with the path "9/x" (found by fuzz_url), which would read as port 809.
  if (!url.base_path.empty() && url.base_path.front() != '/')
    throw std::invalid_argument("malformed URL " + shown + ": after the host and port the path must "
                                "start with '/'");
  while (!url.base_path.empty() && url.base_path.back() == '/') url.base_path.pop_back();
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
