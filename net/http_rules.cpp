#include "net/http_rules.hpp"

#include <algorithm>
#include <charconv>

#include <boost/beast/core/string.hpp>

namespace retrace::net {

namespace {

constexpr std::string_view kAlways[] = {"connection", "proxy-connection", "keep-alive",
                                        "te",         "transfer-encoding", "upgrade",
                                        "trailer",    "host",              "content-length",
                                        "expect"};

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

// Calls f(token) for each comma-separated, trimmed, non-empty token of a header value.
template <class F>
void for_each_token(std::string_view list, F&& f) {
  while (!list.empty()) {
    auto comma = list.find(',');
    auto token = trim(list.substr(0, comma));
    if (!token.empty()) f(token);
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
}

std::optional<std::uint64_t> parse_count(std::string_view text) {
  if (text.size() >= 2 && text.front() == '"' && text.back() == '"') text = text.substr(1, text.size() - 2);
  std::uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace

KeepAlive parse_keep_alive(std::string_view value) {
  KeepAlive out;
  for_each_token(value, [&](std::string_view token) {
    auto equals = token.find('=');
    if (equals == std::string_view::npos) return;
    auto name = trim(token.substr(0, equals));
    auto count = parse_count(trim(token.substr(equals + 1)));
    if (!count) return;
    if (boost::beast::iequals(name, "timeout"))
      out.timeout = std::chrono::seconds(std::min<std::uint64_t>(*count, 1u << 30));
    else if (boost::beast::iequals(name, "max"))
      out.max = *count;
  });
  return out;
}

HopByHop::HopByHop(std::string_view connection) {
  for_each_token(connection, [&](std::string_view token) { named_.emplace_back(token); });
}

bool HopByHop::operator()(std::string_view name) const {
  for (auto always : kAlways)
    if (boost::beast::iequals(name, always)) return true;
  for (const auto& named : named_)
    if (boost::beast::iequals(name, named)) return true;
  return false;
}

}  // namespace retrace::net
