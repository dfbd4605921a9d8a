#include "net/connection.hpp"

#include <algorithm>
#include <filesystem>
#include <stdexcept>

#include <sys/socket.h>

#include <cerrno>

#include <openssl/ssl.h>

#include <boost/asio/ssl/host_name_verification.hpp>

#include "net/drained_read.hpp"
#include "net/http_rules.hpp"

namespace retrace::net {

std::shared_ptr<asio::ssl::context> make_client_tls_context(const TlsOptions& options) {
  auto context = std::make_shared<asio::ssl::context>(asio::ssl::context::tls_client);
  context->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                       asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                       asio::ssl::context::no_tlsv1_1);
  if (options.insecure) {
    context->set_verify_mode(asio::ssl::verify_none);
    return context;
  }
  context->set_verify_mode(asio::ssl::verify_peer);
  error_code ec;
  if (!options.ca_file.empty()) {
    if (!std::filesystem::exists(options.ca_file))
      throw std::runtime_error("--ca-file '" + options.ca_file +
                               "' does not exist: give a PEM file with the CA certificates");
    context->load_verify_file(options.ca_file, ec);
    if (ec)
      throw std::runtime_error("cannot load CA certificates from --ca-file '" + options.ca_file +
                               "': " + ec.message() + " (it must be PEM)");
  } else {
    context->set_default_verify_paths(ec);
    if (ec)
      throw std::runtime_error("cannot load the system CA certificates: " + ec.message() +
                               "; give --ca-file PEM or --insecure");
  }
  return context;
}

std::string pool_key(const Url& url) {
  return url.scheme + "://" + url.host + ":" + std::to_string(url.port);
}

namespace {
UpstreamConnection::Stream make_stream(asio::any_io_executor executor, const Url& url,
                                       const std::shared_ptr<asio::ssl::context>& tls) {
  if (url.tls()) {
    if (!tls) throw std::logic_error("https upstream " + url.str() + " needs a TLS context");
    return UpstreamConnection::Stream(std::in_place_index<1>, executor, *tls);
  }
  return UpstreamConnection::Stream(std::in_place_index<0>, executor);
}
}  // namespace

UpstreamConnection::UpstreamConnection(asio::any_io_executor executor, Url url,
                                       std::shared_ptr<asio::ssl::context> tls)
    : url_(std::move(url)),
      pool_key_(net::pool_key(url_)),
      tls_(std::move(tls)),
      resolver_(executor),
      stream_(make_stream(executor, url_, tls_)) {
  buffer_.reserve(kReadRoomBytes);
}

beast::tcp_stream& UpstreamConnection::tcp_layer() {
  return visit([](auto& stream) -> beast::tcp_stream& { return beast::get_lowest_layer(stream); });
}

void UpstreamConnection::expires_after(std::chrono::steady_clock::duration timeout) {
  tcp_layer().expires_after(timeout);
}

void UpstreamConnection::expires_never() { tcp_layer().expires_never(); }

void UpstreamConnection::close() {
  resolver_.cancel();
  error_code ignored;
  tcp_layer().socket().shutdown(tcp::socket::shutdown_both, ignored);
  tcp_layer().close();
}

bool UpstreamConnection::is_open() { return tcp_layer().socket().is_open(); }

bool UpstreamConnection::idle_clean() {
  if (!is_open() || buffer_.size() != 0) return false;
  char byte;
  auto peeked = ::recv(tcp_layer().socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (peeked == 0) return false;  // the upstream closed it
  if (peeked < 0) return errno == EAGAIN || errno == EWOULDBLOCK;
  // Bytes are waiting. Over TLS they may be records that are not response bytes (session
  // tickets), so only a plain connection counts them as stray.
  return !std::holds_alternative<beast::tcp_stream>(stream_);
}

void UpstreamConnection::honour_keep_alive(std::string_view keep_alive_header) {
  auto limits = parse_keep_alive(keep_alive_header);
  if (limits.timeout) {
    auto timeout = std::chrono::duration_cast<std::chrono::steady_clock::duration>(*limits.timeout);
    idle_limit = timeout - std::min<std::chrono::steady_clock::duration>(std::chrono::seconds(1), timeout / 2);
  }
  if (limits.max) max_responses = *limits.max;
}

void UpstreamConnection::async_connect(std::chrono::steady_clock::duration timeout,
                                       ConnectHandler handler) {
  connect_handler_ = std::move(handler);
  connect_timeout_ = timeout;
  // A deadline for waiting, so on real time (an Asio timer's), not a measurement.
  connect_deadline_ = std::chrono::steady_clock::now() + timeout;
  // The resolver has no deadline of its own; numeric hosts (the common case) resolve at once.
  resolver_.async_resolve(url_.host, std::to_string(url_.port),
                          [this](error_code ec, tcp::resolver::results_type results) {
                            on_resolve(ec, std::move(results));
                          });
}

void UpstreamConnection::on_resolve(error_code ec, tcp::resolver::results_type results) {
  if (ec) return std::exchange(connect_handler_, nullptr)(ec, Phase::resolve);
  auto& layer = tcp_layer();
  layer.expires_at(connect_deadline_);
  layer.async_connect(results, [this](error_code ec, const tcp::endpoint&) { on_connect(ec); });
}

void UpstreamConnection::on_connect(error_code ec) {
  if (ec) return std::exchange(connect_handler_, nullptr)(ec, Phase::connect);
  error_code ignored;
  tcp_layer().socket().set_option(tcp::no_delay(true), ignored);
  enable_drained_reads(tcp_layer().socket());
  auto* tls_stream = std::get_if<1>(&stream_);
  if (!tls_stream) {
    tcp_layer().expires_never();
    return std::exchange(connect_handler_, nullptr)({}, Phase::connect);
  }
  // SNI, and the name the certificate must carry (unless --insecure set verify_none).
  if (!SSL_set_tlsext_host_name(tls_stream->native_handle(), url_.host.c_str())) {
    error_code sni(static_cast<int>(::ERR_get_error()), asio::error::get_ssl_category());
    return std::exchange(connect_handler_, nullptr)(sni, Phase::tls_handshake);
  }
  tls_stream->set_verify_callback(asio::ssl::host_name_verification(url_.host));
  tls_stream->async_handshake(asio::ssl::stream_base::client,
                              [this](error_code ec) { on_handshake(ec); });
}

void UpstreamConnection::on_handshake(error_code ec) {
  tcp_layer().expires_never();
  std::exchange(connect_handler_, nullptr)(ec, Phase::tls_handshake);
}

std::unique_ptr<UpstreamConnection> ConnectionPool::take(const Url& url) { return take(pool_key(url)); }

std::unique_ptr<UpstreamConnection> ConnectionPool::take(std::string_view key) {
  auto found = idle_.find(key);
  if (found == idle_.end()) return nullptr;
  auto& queue = found->second;
  auto now = clock_.now();
  // Most recently used first: it is the least likely to have been closed by the upstream.
  while (!queue.empty()) {
    auto connection = std::move(queue.back());
    queue.pop_back();
    auto limit = std::min(max_idle_age_, connection->idle_limit);
    if (connection->idle_clean() && now - connection->idle_since < limit) return connection;
    connection->close();
  }
  return nullptr;
}

void ConnectionPool::put(std::unique_ptr<UpstreamConnection> connection) {
  // No look into the socket here (a recv(MSG_PEEK) per response): take() makes that check when
  // the connection is wanted again, which is what matters (a server may close it any time while
  // it idles, or, like llama.cpp's, just after its response, often after this point anyway).
  if (!connection || !connection->is_open() || connection->buffer().size() != 0) return;
  if (connection->responses >= connection->max_responses) {
    connection->close();
    return;
  }
  auto& queue = idle_[connection->pool_key()];
  connection->idle_since = clock_.now();
  connection->expires_never();
  queue.push_back(std::move(connection));
  while (queue.size() > max_idle_per_upstream_) {
    queue.front()->close();
    queue.pop_front();
  }
}

std::size_t ConnectionPool::idle() const {
  std::size_t count = 0;
  for (const auto& [key, queue] : idle_) count += queue.size();
  return count;
}

void ConnectionPool::clear() {
  for (auto& [key, queue] : idle_)
    for (auto& connection : queue) connection->close();
  idle_.clear();
}

}  // namespace retrace::net
