#include "net/http_rules.hpp"

#include <boost/beast/core/string.hpp>

namespace retrace::net {

namespace {

constexpr std::string_view kAlways[] = {"connection", "proxy-connection", "keep-alive",
                                        "te",         "transfer-encoding", "upgrade",
                                        "trailer",    "host",              "content-length",
                                        "expect"};

}  // namespace

std::string_view trim_ows(std::string_view value) {
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
  return value;
}

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
