#include "net/fetch.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/beast/http.hpp>

#include "net/connection.hpp"
#include "net/fetch_exchange.hpp"
#include "net/http_rules.hpp"
#include "version.hpp"

namespace retrace::net {

namespace http = beast::http;

namespace {

Fetched send_once(const Url& url, const std::shared_ptr<asio::ssl::context>& tls,
                  http::request<http::string_body>& request,
                  std::chrono::steady_clock::duration timeout, std::size_t body_limit,
                  const std::vector<HttpHeader>& headers) {
  asio::io_context io;
  UpstreamConnection connection(io.get_executor(), url, tls);
  request.set(http::field::host, url.host_header());
  request.set(http::field::user_agent, std::string("retrace/") + kToolVersion);
  request.set(kProbeHeader, kProbeHeaderValue);  // not trace traffic: record keeps it out
  for (const auto& header : headers) request.set(header.name, header.value);
  request.keep_alive(false);
  http::response_parser<http::string_body> parser;
  parser.body_limit(body_limit);

  // The handlers below run inside io.run(), so every local outlives them.
  Fetched result;
  connection.async_connect(timeout, [&](error_code ec, Phase phase) {
    if (ec) {
      result.error = describe(ec, phase, url.str());
      return;
    }
    detail::start_exchange(connection, request, parser, timeout, url, result,
                           [&](bool) { connection.close(); });
  });
  io.run();
  return result;
}

}  // namespace

void detail::start_exchange(UpstreamConnection& connection, const http::request<http::string_body>& request,
                            http::response_parser<http::string_body>& parser,
                            std::chrono::steady_clock::duration timeout, const Url& url, Fetched& result,
                            std::function<void(bool keep_alive)> done) {
  auto fail = [&result, &url, done](error_code ec, Phase phase) {
    result.error = describe(ec, phase, url.str());
    done(false);
  };
  result.connected = true;
  connection.expires_after(timeout);
  connection.visit([&, fail, done = std::move(done)](auto& stream) {
    http::async_write(stream, request, [&, fail, done](error_code ec, std::size_t) {
      if (ec) return fail(ec, Phase::write_request);
      http::async_read(stream, connection.buffer(), parser, [&, fail, done](error_code ec, std::size_t) {
        if (ec) return fail(ec, parser.is_header_done() ? Phase::read_body : Phase::read_header);
        auto& response = parser.get();
        result.status = static_cast<int>(response.result_int());
        if (auto server = response.find(http::field::server); server != response.end())
          result.server = std::string(server->value());
        bool keep_alive = response.keep_alive();
        result.body = std::move(response.body());
        done(keep_alive);
      });
    });
  });
}

Fetched fetch(const Url& url, const std::shared_ptr<asio::ssl::context>& tls,
              std::string_view path, std::chrono::steady_clock::duration timeout,
              std::size_t body_limit, const std::vector<HttpHeader>& headers) {
  http::request<http::string_body> request{http::verb::get, url.join(path), 11};
  return send_once(url, tls, request, timeout, body_limit, headers);
}

Fetched post_json(const Url& url, const std::shared_ptr<asio::ssl::context>& tls,
                  std::string_view path, std::string body,
                  std::chrono::steady_clock::duration timeout, std::size_t body_limit) {
  http::request<http::string_body> request{http::verb::post, url.join(path), 11};
  request.set(http::field::content_type, "application/json");
  request.body() = std::move(body);
  request.prepare_payload();
  return send_once(url, tls, request, timeout, body_limit, {});
}

}  // namespace retrace::net
