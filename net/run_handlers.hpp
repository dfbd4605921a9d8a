// Running an io_context so that an exception out of a completion handler costs the operation it
// came from, not the process.
//
// Asio lets an exception thrown by a handler leave io_context::run(); a thread that does not catch
// it ends the program (std::terminate, SIGABRT), and with it every exchange in flight and every
// one waiting to be written. The handlers of record, serve and replay are written not to throw,
// but a library below them may (Beast's fields throw std::length_error past 64 KiB; an allocation
// may fail), so each of their threads runs its io_context through run_handlers(): the handler that
// threw is dropped (and with it whatever it alone kept alive: its session ends, its sockets close)
// and every other piece of work goes on.
#pragma once

#include <functional>
#include <string_view>

#include <boost/asio/io_context.hpp>

namespace retrace::net {

// io.run() until it runs out of work (or is stopped); `on_exception(what)` is called on this
// thread for each exception a handler threw, before running resumes.
void run_handlers(boost::asio::io_context& io,
                  const std::function<void(std::string_view what)>& on_exception);

}  // namespace retrace::net
