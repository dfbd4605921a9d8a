// A socket read that does not try a socket it has just drained: async_read_some, except that a
// read after which the kernel says nothing is left tells the reactor the socket is empty, so
// that the next read waits for epoll instead of first trying a recv that fails with EAGAIN.
//
// Why: Asio 1.81's epoll reactor tries every read at once ("speculatively") unless its last read
// of the descriptor returned 0 bytes (reactive_socket_recv_op.hpp: only end of stream counts as
// exhausted). A token stream arrives in bursts: each read drains the socket, and the next read,
// issued as soon as the burst is parsed, finds it empty: in replay (b) about half of all recvfrom
// calls failed with EAGAIN (bench/RESULTS.md, "spec"). Waiting a turn of the io_context first
// does not help (the next burst comes after the server has served the other streams: measured,
// as many failed), and async_wait + a non-blocking read trades each failed recv for an
// epoll_ctl(MOD), which Asio issues for every async_wait (measured: as many). No public API marks
// a descriptor drained, so this file does it the way Asio's own recv op reports end of stream:
// the same reactor op, but a read that leaves nothing is reported as done_and_exhausted.
//
// "Drained" needs more than a short read: a recv that returns bytes also consumes a FIN that came
// with them, silently, and an RST that came before the epoll_wait that reported them wakes nobody
// again; either would leave the next read waiting for ever (tests/net_drained_read_test.cpp has
// both). So enable_drained_reads asks epoll for the peer's FIN too (EPOLLRDHUP, one epoll_ctl a
// connection), and a short read is exhausted only when epoll's last report for the descriptor had
// no EPOLLRDHUP, EPOLLERR or EPOLLHUP: a FIN or RST before that report shows in it, and one after
// it wakes the edge-triggered registration again, as every later byte does; the reactor then
// marks the descriptor worth trying (perform_io) and performs the queued read. (TCP_INQ's count
// of bytes left, which counts a FIN, would do without the events, but needs recvmsg: measured,
// 0.24 µs a read dearer than recv, most of the 0.34 µs a failed recv costs.)
//
// Timing: a byte that arrives after the drain was, before this, also read only after the next
// epoll_wait in all but one case: it arrived after the last epoll_wait and before the next read
// was issued. Then the speculative recv found it at once; now the read waits for that
// epoll_wait, which runs after the handlers already queued (one turn of the io_context, the turn
// a byte a microsecond later waits for anyway): its arrival stamp is later by that turn at most.
//
// It reaches into Asio's detail namespace, so it is built only for the version it was written
// against (BOOST_VERSION 108100) with the epoll reactor; anywhere else, on a socket not passed to
// enable_drained_reads, and for a handler bound to a cancellation slot (this op does not register
// one), it is exactly async_read_some. It reads the reactor's descriptor data without the
// descriptor's lock: for an io_context run by one thread, as replay's workers' and record's proxy
// threads' are.
// Closing the socket aborts it as it aborts async_read_some (the reactor cancels every queued op
// of a deregistered descriptor with operation_aborted).
//
// The op is a template here, instantiated by replay/ (for a coroutine: clang-14, which builds net/
// for the fuzz targets, fails on coroutines in net/) and record/ (through DrainedReadStream);
// drained_read.cpp holds the registration change.
#pragma once

#include <cstddef>
#include <memory>
#include <type_traits>
#include <utility>

#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/execution/context.hpp>
#include <boost/asio/query.hpp>
#include <boost/system/error_code.hpp>
#include <boost/version.hpp>

#if BOOST_VERSION == 108100 && defined(BOOST_ASIO_HAS_EPOLL) &&             \
    !defined(BOOST_ASIO_HAS_IO_URING_AS_DEFAULT) && !defined(BOOST_ASIO_HAS_IOCP) && \
    !defined(BOOST_ASIO_DISABLE_EPOLL)
#define RETRACE_DRAINED_READ_REACTOR 1
#include <boost/asio/detail/bind_handler.hpp>
#include <boost/asio/detail/epoll_reactor.hpp>
#include <boost/asio/detail/fenced_block.hpp>
#include <boost/asio/detail/handler_alloc_helpers.hpp>
#include <boost/asio/detail/handler_cont_helpers.hpp>
#include <boost/asio/detail/handler_work.hpp>
#include <boost/asio/detail/reactor.hpp>
#include <boost/asio/detail/reactor_op.hpp>
#include <boost/asio/detail/socket_ops.hpp>

#include <sys/epoll.h>
#else
#define RETRACE_DRAINED_READ_REACTOR 0
#endif

namespace retrace::net {

#if RETRACE_DRAINED_READ_REACTOR
namespace drained_read_detail {

namespace ad = boost::asio::detail;
static_assert(std::is_same_v<ad::reactor, ad::epoll_reactor>, "written for Asio 1.81's epoll reactor");

// The socket's implementation (its descriptor, state and reactor data), which basic_socket keeps
// protected: a member pointer named through a derived class is one to the base's member.
template <class Socket>
struct ImplAccess : Socket {
  static constexpr auto member() { return &ImplAccess::impl_; }
};

// The events epoll last reported for a descriptor (the scheduler_operation base of its reactor
// data, which the reactor hands to perform_io), for the same reason as ImplAccess.
struct EventsAccess : ad::scheduler_operation {
  static constexpr auto member() { return &EventsAccess::task_result_; }
};
inline unsigned last_events(ad::epoll_reactor::per_descriptor_data descriptor) {
  // A C-style cast: descriptor_state's base is private, and this is the one conversion to it.
  return ((ad::scheduler_operation*)descriptor)->*EventsAccess::member();
}

// Whether epoll reports the peer's FIN for this descriptor (EPOLLRDHUP), which Asio does not ask
// for: enable_drained_reads adds it (net/drained_read.cpp, the two private members it needs).
bool watches_peer_close(ad::epoll_reactor::per_descriptor_data descriptor);
bool watch_peer_close(ad::epoll_reactor& reactor, ad::socket_type socket,
                      ad::epoll_reactor::per_descriptor_data descriptor);

// Asio's reactive_socket_recv_op for one buffer, stream sockets, no flags, but a read that
// drained the socket is done_and_exhausted: the reactor then queues the next read without a
// speculative recv.
template <class Handler, class IoExecutor>
class DrainedRecvOp : public ad::reactor_op {
 public:
  BOOST_ASIO_DEFINE_HANDLER_PTR(DrainedRecvOp);

  DrainedRecvOp(ad::socket_type socket, ad::epoll_reactor::per_descriptor_data descriptor,
                boost::asio::mutable_buffer buffer, Handler& handler, const IoExecutor& io_ex)
      : ad::reactor_op(boost::system::error_code(), &DrainedRecvOp::do_perform, &DrainedRecvOp::do_complete),
        socket_(socket),
        descriptor_(descriptor),
        buffer_(buffer),
        handler_(std::move(handler)),
        work_(handler_, io_ex) {}

  static status do_perform(ad::reactor_op* base) {
    auto* o = static_cast<DrainedRecvOp*>(base);
    if (!ad::socket_ops::non_blocking_recv1(o->socket_, o->buffer_.data(), o->buffer_.size(), 0, true,
                                            o->ec_, o->bytes_transferred_))
      return not_done;
    if (o->bytes_transferred_ == 0) return done_and_exhausted;  // as Asio's own: end of stream, an error
    // Fewer bytes than asked: the receive queue was empty, unless a FIN or RST came before the
    // epoll_wait that last reported the descriptor (then nothing wakes it again; this recv took
    // the FIN silently, or left the RST's error for the next).
    return o->bytes_transferred_ < o->buffer_.size() && watches_peer_close(o->descriptor_) &&
                   !(last_events(o->descriptor_) & (EPOLLERR | EPOLLHUP | EPOLLRDHUP))
               ? done_and_exhausted
               : done;
  }

  // As reactive_socket_recv_op::do_complete: free the op before the upcall, through the work guard.
  static void do_complete(void* owner, ad::operation* base, const boost::system::error_code&, std::size_t) {
    auto* o = static_cast<DrainedRecvOp*>(base);
    ptr p = {std::addressof(o->handler_), o, o};
    ad::handler_work<Handler, IoExecutor> w(std::move(o->work_));
    ad::binder2<Handler, boost::system::error_code, std::size_t> handler(o->handler_, o->ec_,
                                                                          o->bytes_transferred_);
    p.h = std::addressof(handler.handler_);
    p.reset();
    if (owner) {
      ad::fenced_block b(ad::fenced_block::half);
      w.complete(handler, handler.handler_);
    }
  }

 private:
  ad::socket_type socket_;
  ad::epoll_reactor::per_descriptor_data descriptor_;  // the socket's, which outlives its ops
  boost::asio::mutable_buffer buffer_;
  Handler handler_;
  ad::handler_work<Handler, IoExecutor> work_;
};

}  // namespace drained_read_detail
#endif

// Lets async_read_drained tell a drained socket from one whose peer closed it: epoll reports the
// peer's FIN (EPOLLRDHUP) for `socket` from now on. Call once per connection, after it is open;
// one epoll_ctl. Without it (or where it fails) async_read_drained is async_read_some.
template <class Socket>
void enable_drained_reads(Socket& socket) {
#if RETRACE_DRAINED_READ_REACTOR
  namespace ad = boost::asio::detail;
  if (!socket.is_open()) return;
  auto& impl = (socket.*drained_read_detail::ImplAccess<Socket>::member()).get_implementation();
  auto& reactor = boost::asio::use_service<ad::reactor>(
      boost::asio::query(socket.get_executor(), boost::asio::execution::context));
  drained_read_detail::watch_peer_close(reactor, impl.socket_, impl.reactor_data_);
#else
  (void)socket;
#endif
}

// Reads some bytes of `socket` (a basic_stream_socket) into `buffer`, completing with
// (error_code, bytes) as async_read_some does; see the top of this file for what differs.
// `socket` and `buffer` must outlive the read.
template <class Socket, class Token>
auto async_read_drained(Socket& socket, boost::asio::mutable_buffer buffer, Token&& token) {
  return boost::asio::async_initiate<Token, void(boost::system::error_code, std::size_t)>(
      [](auto handler, Socket* socket, boost::asio::mutable_buffer buffer) {
#if RETRACE_DRAINED_READ_REACTOR
        namespace ad = boost::asio::detail;
        using Handler = decltype(handler);
        using IoExecutor = typename Socket::executor_type;
        using Op = drained_read_detail::DrainedRecvOp<Handler, IoExecutor>;
        if (buffer.size() > 0 && socket->is_open() &&
            !boost::asio::get_associated_cancellation_slot(handler).is_connected()) {
          auto& impl = (socket->*drained_read_detail::ImplAccess<Socket>::member()).get_implementation();
          auto& reactor = boost::asio::use_service<ad::reactor>(
              boost::asio::query(socket->get_executor(), boost::asio::execution::context));
          bool is_continuation = boost_asio_handler_cont_helpers::is_continuation(handler);
          typename Op::ptr p = {std::addressof(handler), Op::ptr::allocate(handler), nullptr};
          p.p = new (p.v) Op(impl.socket_, impl.reactor_data_, buffer, handler, socket->get_executor());
          // As reactive_socket_service_base::start_op: the descriptor non-blocking first.
          if ((impl.state_ & ad::socket_ops::non_blocking) ||
              ad::socket_ops::set_internal_non_blocking(impl.socket_, impl.state_, true, p.p->ec_))
            reactor.start_op(ad::reactor::read_op, impl.socket_, impl.reactor_data_, p.p, is_continuation, true);
          else
            reactor.post_immediate_completion(p.p, is_continuation);
          p.v = p.p = nullptr;
          return;
        }
#endif
        socket->async_read_some(buffer, std::move(handler));
      },
      token, &socket, buffer);
}

// A read stream for Beast's algorithms (http::async_read_some) over a plain socket, whose reads
// are async_read_drained into the first non-empty buffer they are given (Beast's flat_buffer
// gives one). Beast's operations keep a reference to their stream: keep this one alive, and
// pointed at the socket, until the operation completes.
template <class Socket>
class DrainedReadStream {
 public:
  using executor_type = typename Socket::executor_type;
  void reset(Socket& socket) { socket_ = &socket; }
  executor_type get_executor() { return socket_->get_executor(); }
  template <class MutableBuffers, class Token>
  auto async_read_some(const MutableBuffers& buffers, Token&& token) {
    boost::asio::mutable_buffer into;
    for (auto it = boost::asio::buffer_sequence_begin(buffers); it != boost::asio::buffer_sequence_end(buffers); ++it)
      if ((into = boost::asio::mutable_buffer(*it)).size() > 0) break;
    return async_read_drained(*socket_, into, std::forward<Token>(token));
  }

 private:
  Socket* socket_ = nullptr;
};

}  // namespace retrace::net
