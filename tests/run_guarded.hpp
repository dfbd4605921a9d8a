// Runs a test's coroutine on an io_context that the test owns, with a guard: a read that waits for
// bytes the test never sends would wait for ever, so after 20 s `on_stall` runs (it closes the
// socket, and the read's error fails the test). Rethrows what the coroutine threw.
#pragma once

#include <chrono>
#include <exception>
#include <functional>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

inline void run_guarded(boost::asio::io_context& io, const std::function<void()>& on_stall,
                        const std::function<boost::asio::awaitable<void>()>& steps) {
  boost::asio::steady_timer guard(io, std::chrono::seconds(20));
  guard.async_wait([&](boost::system::error_code ec) {
    if (!ec) on_stall();
  });
  std::exception_ptr failure;
  boost::asio::co_spawn(io, steps(), [&](std::exception_ptr e) {
    failure = e;
    guard.cancel();
  });
  io.run();
  if (failure) std::rethrow_exception(failure);
}
