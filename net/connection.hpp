// Connections to an upstream (record) or target (replay): plain TCP or TLS behind one type, a TLS
// client context factory, and a keep-alive pool.
//
// Threading: an UpstreamConnection and a ConnectionPool belong to one io_context thread (or one
// strand); nothing here locks. Run one pool per worker thread, as Beast's examples run one
// io_context per thread.
//
// Lifetimes: asynchronous operations capture `this`; the caller keeps the connection alive until
// the completion handler has run (hold it in the session object whose shared_ptr the handler
// captures).
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <variant>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>

#include "base/clock.hpp"
#include "net/errors.hpp"
#include "net/url.hpp"

namespace retrace::net {

namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;

// --ca-file / --insecure.
struct TlsOptions {
  std::string ca_file;    // PEM bundle to trust instead of the system store; "" = system store
  bool insecure = false;  // skip certificate and host name verification (tests, self-signed)
};

// A TLS client context: TLS 1.2+, peer verification against the system CA store (or ca_file)
// unless insecure. Throws std::runtime_error naming the file and what to try.
std::shared_ptr<asio::ssl::context> make_client_tls_context(const TlsOptions& options);

// One connection to one upstream, plain or TLS. Use visit() to run any Beast operation on the
// concrete stream:  conn.visit([&](auto& stream) { http::async_write(stream, msg, handler); });
class UpstreamConnection {
 public:
  using Stream = std::variant<beast::tcp_stream, beast::ssl_stream<beast::tcp_stream>>;
  using ConnectHandler = std::function<void(error_code, Phase)>;

  // `tls` must be non-null for an https:// url; it must outlive the connection.
  UpstreamConnection(asio::any_io_executor executor, Url url,
                     std::shared_ptr<asio::ssl::context> tls);
  UpstreamConnection(const UpstreamConnection&) = delete;
  UpstreamConnection& operator=(const UpstreamConnection&) = delete;

  // Resolve, connect, and for https handshake with SNI and host name verification, all within
  // `timeout`. The handler gets the phase that failed (or the last phase on success).
  void async_connect(std::chrono::steady_clock::duration timeout, ConnectHandler handler);

  template <class F>
  decltype(auto) visit(F&& f) {
    return std::visit(std::forward<F>(f), stream_);
  }
  beast::tcp_stream& tcp_layer();
  // Deadline for the next operations (Beast's tcp_stream timeout); expires_never() to clear.
  void expires_after(std::chrono::steady_clock::duration timeout);
  void expires_never();
  // Closes the socket at once; pending operations complete with operation_aborted. Used to cancel
  // an upstream request when its client went away. The connection is not reusable afterwards.
  void close();
  bool is_open();
  // Open, not closed by the upstream (no end of stream waiting in the socket), and nothing
  // received past the last message: no bytes buffered, and (plain TCP) none waiting in the
  // socket. A connection with stray bytes (a body after a HEAD response, a late interim response)
  // would hand them to the next request as its response, so it is not reused.
  bool idle_clean();

  const Url& url() const { return url_; }
  const std::string& pool_key() const { return pool_key_; }
  // Bytes read past the end of the last message stay here for the next one. It keeps
  // kReadRoomBytes of capacity: Beast sizes each socket read by the buffer's free capacity (at
  // least 512 bytes), so an unreserved buffer would read a burst of streamed events 512 bytes at
  // a time.
  beast::flat_buffer& buffer() { return buffer_; }
  static constexpr std::size_t kReadRoomBytes = 64u << 10;
  // How many responses this connection has carried; a reused one may have been closed by the
  // upstream while idle, which a caller should retry once on a fresh connection.
  std::uint64_t responses = 0;
  std::chrono::steady_clock::time_point idle_since{};
  // The upstream's keep-alive limits, from the Keep-Alive header of its last response: the pool
  // does not reuse the connection once idle past `idle_limit` (a second short of the server's
  // timeout, so that a request is not sent as the server closes) or after `max_responses`. With
  // a server that counts `max` down (Apache), this stops reuse early, never late.
  void honour_keep_alive(std::string_view keep_alive_header);
  std::chrono::steady_clock::duration idle_limit = std::chrono::steady_clock::duration::max();
  std::uint64_t max_responses = UINT64_MAX;

 private:
  void on_resolve(error_code ec, tcp::resolver::results_type results);
  void on_connect(error_code ec);
  void on_handshake(error_code ec);

  Url url_;
  std::string pool_key_;
  std::shared_ptr<asio::ssl::context> tls_;
  tcp::resolver resolver_;
  Stream stream_;
  beast::flat_buffer buffer_;
  std::chrono::steady_clock::duration connect_timeout_{};
  std::chrono::steady_clock::time_point connect_deadline_{};
  ConnectHandler connect_handler_;
};

// "scheme://host:port", the key connections to the same upstream share.
std::string pool_key(const Url& url);

// Idle keep-alive connections by upstream. Not thread-safe: one per io_context thread.
class ConnectionPool {
 public:
  // `clock` measures how long a connection has been idle; it outlives the pool.
  explicit ConnectionPool(const Clock& clock, std::size_t max_idle_per_upstream = 256,
                          std::chrono::steady_clock::duration max_idle_age = std::chrono::seconds(30))
      : clock_(clock), max_idle_per_upstream_(max_idle_per_upstream), max_idle_age_(max_idle_age) {}

  // An idle connection to `url`'s upstream, or nullptr (then connect a new one). Connections idle
  // longer than max_idle_age are closed and skipped: upstreams drop idle connections.
  std::unique_ptr<UpstreamConnection> take(const Url& url);
  // The same, by pool_key(url) (a caller that takes often keeps the key).
  std::unique_ptr<UpstreamConnection> take(std::string_view key);
  // Returns a connection whose last response was read completely and which may be kept alive.
  // Whether the upstream closed it or sent stray bytes is checked by take(), not here.
  void put(std::unique_ptr<UpstreamConnection> connection);
  std::size_t idle() const;
  void clear();

 private:
  const Clock& clock_;
  std::size_t max_idle_per_upstream_;
  std::chrono::steady_clock::duration max_idle_age_;
  std::map<std::string, std::deque<std::unique_ptr<UpstreamConnection>>, std::less<>> idle_;
};

}  // namespace retrace::net
