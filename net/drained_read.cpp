// See net/drained_read.hpp: the two private members of Asio 1.81's epoll reactor it needs to ask
// epoll for the peer's FIN.
#include "net/drained_read.hpp"

#if RETRACE_DRAINED_READ_REACTOR
#include <cstdint>

namespace retrace::net::drained_read_detail {

namespace {
// A private member named the one way C++ allows: the template arguments of an explicit
// instantiation are not access-checked.
template <class Tag, typename Tag::type Member>
struct Expose {
  friend typename Tag::type member(Tag) { return Member; }
};
struct EpollFd {
  using type = int ad::epoll_reactor::*;
  friend type member(EpollFd);
};
struct RegisteredEvents {
  using type = std::uint32_t ad::epoll_reactor::descriptor_state::*;
  friend type member(RegisteredEvents);
};
template struct Expose<EpollFd, &ad::epoll_reactor::epoll_fd_>;
template struct Expose<RegisteredEvents, &ad::epoll_reactor::descriptor_state::registered_events_>;
}  // namespace

bool watches_peer_close(ad::epoll_reactor::per_descriptor_data descriptor) {
  return descriptor && (descriptor->*member(RegisteredEvents{}) & EPOLLRDHUP);
}

// As the reactor adds EPOLLOUT for a write (start_op): the registration modified, and the events
// it keeps for the next modification updated, so that a later EPOLLOUT keeps EPOLLRDHUP. Without
// the descriptor's lock: for an io_context run by one thread.
bool watch_peer_close(ad::epoll_reactor& reactor, ad::socket_type socket,
                      ad::epoll_reactor::per_descriptor_data descriptor) {
  if (!descriptor) return false;
  auto& registered = descriptor->*member(RegisteredEvents{});
  if (registered == 0) return false;  // a descriptor epoll does not take
  if (registered & EPOLLRDHUP) return true;
  epoll_event event{};
  event.events = registered | EPOLLRDHUP;
  event.data.ptr = descriptor;
  if (::epoll_ctl(reactor.*member(EpollFd{}), EPOLL_CTL_MOD, socket, &event) != 0) return false;
  registered = event.events;
  return true;
}

}  // namespace retrace::net::drained_read_detail
#endif
