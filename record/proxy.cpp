// The proxy workers: one io_context thread each, with its upstream pool and the client sessions
// (record/session.hpp) accepted onto it.
#include "record/proxy.hpp"

#include "net/run_handlers.hpp"
#include "record/session.hpp"

namespace retrace::record {

using net::error_code;
using net::tcp;

Worker::Worker(ProxyShared& shared) : shared_(shared) { work_.emplace(io_.get_executor()); }

Worker::~Worker() { pool_.clear(); }

void Worker::run(const std::function<void(std::string_view what)>& on_exception) {
  net::run_handlers(io_, on_exception);
  finished_ = true;
}

void Worker::start_session(tcp::socket socket) {
  if (shared_.draining) {
    error_code ignored;
    socket.close(ignored);
    return;
  }
  auto id = next_session_id_++;
  auto session = std::make_shared<ClientSession>(*this, std::move(socket), id);
  sessions_.emplace(id, session);
  session->start();
}

void Worker::close_idle_sessions() {
  // Copy first: closing may complete handlers that erase from sessions_ (they run later, but be
  // safe against re-entrancy).
  std::vector<std::shared_ptr<ClientSession>> alive;
  for (auto& [id, weak] : sessions_)
    if (auto session = weak.lock()) alive.push_back(std::move(session));
  for (auto& session : alive) session->close_if_idle();
}

void Worker::cut_sessions() {
  std::vector<std::shared_ptr<ClientSession>> alive;
  for (auto& [id, weak] : sessions_)
    if (auto session = weak.lock()) alive.push_back(std::move(session));
  for (auto& session : alive) session->cut();
}

void Worker::finish() {
  pool_.clear();
  cut_sessions();
  work_.reset();
}

}  // namespace retrace::record
