#include "net/http_rules.hpp"

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

}  // namespace

HopByHop::HopByHop(std::string_view connection) {
  while (!connection.empty()) {
    auto comma = connection.find(',');
    auto token = trim(connection.substr(0, comma));
    if (!token.empty()) named_.emplace_back(token);
    if (comma == std::string_view::npos) break;
    connection.remove_prefix(comma + 1);
  }
}

bool HopByHop::operator()(std::string_view name) const {
  for (auto always : kAlways)
    if (boost::beast::iequals(name, always)) return true;
  for (const auto& named : named_)
    if (boost::beast::iequals(name, named)) return true;
  return false;
}

}  // namespace retrace::net
