#include "net/run_handlers.hpp"

#include <exception>

namespace retrace::net {

void run_handlers(boost::asio::io_context& io,
                  const std::function<void(std::string_view what)>& on_exception) {
  for (;;) {
    try {
      io.run();
      return;
    } catch (const std::exception& e) {
      // Asio's rule: after a handler's exception, run() may be called again without restart().
      on_exception(e.what());
    } catch (...) {
      on_exception("an exception that is not a std::exception");
    }
  }
}

}  // namespace retrace::net
