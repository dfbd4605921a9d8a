// A socket read that does not try a socket it has just drained: async_read_some, except that a
// read which got fewer bytes than it asked for tells the reactor the socket is empty, so that the
// next read waits for epoll instead of first trying a recv that fails with EAGAIN.
//
// Why: Asio 1.81's epoll reactor tries every read at once ("speculatively") unless its last read
// of the descriptor returned 0 bytes (reactive_socket_recv_op.hpp: only end of stream counts as
// exhausted). A token stream arrives in bursts: each read drains the socket, and the next read,
// issued as soon as the burst is parsed, finds it empty: in replay (b) 49k of 97k recvfrom calls
// failed with EAGAIN (bench/RESULTS.md, "spec"). Waiting a turn of the io_context first does not
// help (the next burst comes after the server has served the other streams: measured, the same
// 49k), and async_wait + a non-blocking read trades each failed recv for an epoll_ctl(MOD),
// which Asio issues for every async_wait (measured: 42k). No public API marks a descriptor
// drained, so this file does it the way Asio's own recv op reports end of stream: the same
// reactor op, but a short read is reported as done_and_exhausted.
//
// Why that is exact: a recv returns fewer bytes than asked only when the socket's receive queue
// was empty at that instant, and every byte that arrives after it wakes the edge-triggered epoll
// registration again; the reactor then marks the descriptor worth trying (perform_io) and
// performs the queued read. So no byte waits longer than it would have: a byte that arrives
// after the drain was, before this, also read only at the next epoll_wait (the failed
// speculative recv came first), and its arrival stamp, taken when the read completes, is the
// same turn of the io_context.
//
// It reaches into Asio's detail namespace, so it is built only for the version it was written
// against (BOOST_VERSION 108100) with the epoll reactor; anywhere else, and for a handler bound
// to a cancellation slot (this op does not register one), it is exactly async_read_some.
// Closing the socket aborts it as it aborts async_read_some (the reactor cancels every queued op
// of a deregistered descriptor with operation_aborted).
//
// Header-only: net/ is also built by clang-14 for the fuzz targets, and only replay/ instantiates
// this (for a coroutine there).
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

// Asio's reactive_socket_recv_op for one buffer, stream sockets, no flags, but a short read is
// done_and_exhausted: the reactor then queues the next read without a speculative recv.
template <class Handler, class IoExecutor>
class DrainedRecvOp : public ad::reactor_op {
 public:
  BOOST_ASIO_DEFINE_HANDLER_PTR(DrainedRecvOp);

  DrainedRecvOp(ad::socket_type socket, boost::asio::mutable_buffer buffer, Handler& handler,
                const IoExecutor& io_ex)
      : ad::reactor_op(boost::system::error_code(), &DrainedRecvOp::do_perform, &DrainedRecvOp::do_complete),
        socket_(socket),
        buffer_(buffer),
        handler_(std::move(handler)),
        work_(handler_, io_ex) {}

  static status do_perform(ad::reactor_op* base) {
    auto* o = static_cast<DrainedRecvOp*>(base);
    if (!ad::socket_ops::non_blocking_recv1(o->socket_, o->buffer_.data(), o->buffer_.size(), 0, true,
                                            o->ec_, o->bytes_transferred_))
      return not_done;
    // Fewer bytes than asked (end of stream and errors are 0 bytes): the socket is empty now.
    return o->bytes_transferred_ < o->buffer_.size() ? done_and_exhausted : done;
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
  boost::asio::mutable_buffer buffer_;
  Handler handler_;
  ad::handler_work<Handler, IoExecutor> work_;
};

}  // namespace drained_read_detail
#endif

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
          p.p = new (p.v) Op(impl.socket_, buffer, handler, socket->get_executor());
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

}  // namespace retrace::net
