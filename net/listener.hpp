// A server's listening socket, bound the one way `retrace serve`, `record` and record's admin
// endpoint bind theirs: the address must be an IP address, SO_REUSEADDR so a restart need not wait
// out TIME_WAIT, and an error that names the flag, the address and what to try.
#pragma once

#include <string>
#include <string_view>

#include <boost/asio/ip/tcp.hpp>

#include "net/url.hpp"

namespace retrace::net {

// Opens `acceptor`, binds it to `address` and listens. `flag` is the option that gave the address
// ("--listen", "--admin-listen"), named in the std::runtime_error thrown when it cannot be done.
void listen_on(boost::asio::ip::tcp::acceptor& acceptor, const ListenAddress& address,
               std::string_view flag);

// http://HOST:PORT of a listening acceptor, the port it got (an IPv6 host in brackets).
std::string listening_url(const boost::asio::ip::tcp::acceptor& acceptor);

}  // namespace retrace::net
