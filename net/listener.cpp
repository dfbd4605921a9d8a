#include "net/listener.hpp"

#include <stdexcept>

namespace retrace::net {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

void listen_on(tcp::acceptor& acceptor, const ListenAddress& address, std::string_view flag) {
  auto named = std::string(flag) + " " + address.host + ":" + std::to_string(address.port);
  boost::system::error_code ec;
  auto ip = asio::ip::make_address(address.host, ec);
  if (ec)
    throw std::runtime_error(named + ": '" + address.host +
                             "' is not an IP address: use e.g. 127.0.0.1:" + std::to_string(address.port));
  tcp::endpoint endpoint(ip, address.port);
  acceptor.open(endpoint.protocol());
  acceptor.set_option(asio::socket_base::reuse_address(true));
  acceptor.bind(endpoint, ec);
  if (ec)
    throw std::runtime_error("cannot listen on " + named + ": " + ec.message() +
                             " (try another port; port 0 picks a free one)");
  acceptor.listen(asio::socket_base::max_listen_connections);
}

std::string listening_url(const tcp::acceptor& acceptor) {
  auto local = acceptor.local_endpoint();
  auto host = local.address().to_string();
  if (local.address().is_v6()) host = "[" + host + "]";
  return "http://" + host + ":" + std::to_string(local.port());
}

}  // namespace retrace::net
