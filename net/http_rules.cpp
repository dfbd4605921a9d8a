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

}  // namespace

std::vector<std::string_view> list_items(std::string_view value) {
  std::vector<std::string_view> items;
  while (!value.empty()) {
    auto comma = value.find(',');
    auto item = trim_ows(value.substr(0, comma));
    if (!item.empty()) items.push_back(item);
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
  return items;
}

namespace {

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
  for (auto token : list_items(value)) {
    auto equals = token.find('=');
    if (equals == std::string_view::npos) continue;
    auto name = trim_ows(token.substr(0, equals));
    auto count = parse_count(trim_ows(token.substr(equals + 1)));
    if (!count) continue;
    if (boost::beast::iequals(name, "timeout"))
      out.timeout = std::chrono::seconds(std::min<std::uint64_t>(*count, 1u << 30));
    else if (boost::beast::iequals(name, "max"))
      out.max = *count;
  }
  return out;
}

HopByHop::HopByHop(std::string_view connection) {
  for (auto token : list_items(connection)) named_.emplace_back(token);
}

bool HopByHop::operator()(std::string_view name) const {
  for (auto always : kAlways)
    if (boost::beast::iequals(name, always)) return true;
  for (const auto& named : named_)
    if (boost::beast::iequals(name, named)) return true;
  return false;
}

}  // namespace retrace::net
