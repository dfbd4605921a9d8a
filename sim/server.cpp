// `retrace serve` (see server.hpp): the listener, routing and shutdown. Sessions are in
// http_session.cpp, request parsing in api.cpp, batching in scheduler.cpp.
#include "sim/server.hpp"

#include <chrono>
#include <ctime>
#include <memory>
#include <optional>
#include <stdexcept>
#include <unordered_map>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "net/accept_backoff.hpp"
#include "net/listener.hpp"
#include "net/run_handlers.hpp"
#include "base/prometheus.hpp"
#include "base/stop_signals.hpp"
#include "net/url.hpp"
#include "sim/api.hpp"
#include "sim/embeddings.hpp"
#include "sim/engine.hpp"
#include "sim/http_session.hpp"
#include "sim/json_out.hpp"
#include "sim/metrics.hpp"
#include "sim/scheduler.hpp"
#include "version.hpp"

namespace retrace::sim {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

// ---------------------------------------------------------------------------------------------
// The server: acceptor, routing, shutdown.

class Server final : public SessionOwner {
 public:
  Server(asio::io_context& io, const ServeOptions& options, std::ostream& log)
      : io_(io),
        options_(options),
        log_(log),
        model_(options.weights_seed),
        scheduler_(io, options_, model_, metrics_),
        acceptor_(io),
        accept_backoff_(io.get_executor(), "retrace serve", log),
        drain_timer_(io) {
    if (!options.answers_path.empty()) answers_ = AnswerBook::load(options.answers_path);
  }

  void listen(std::ostream& announce) {
    net::listen_on(acceptor_, net::parse_listen(options_.listen), "--listen");
    log_ << "retrace serve: simulator model '" << options_.model_name
         << "' (a deterministic toy, not a real LLM); batch variance " << (options_.batch_variance ? "on" : "off")
         << ", prefix cache " << (options_.prefix_cache ? "on" : "off")
         << (options_.cache_variance ? " with cache variance" : "") << ", latency model "
         << (options_.latency_model ? "on" : "off") << ", max batch " << options_.max_batch;
    if (answers_.size()) log_ << ", " << answers_.size() << " known answers";
    log_ << std::endl;
    announce << "listening on " << net::listening_url(acceptor_) << std::endl;
    do_accept();
    // The first signal drains, on the server's own thread; a second exits 130 at once.
    signals_.emplace([this] { asio::post(io_, [this] { begin_shutdown(); }); });
  }

  // After io.run() returns: close everything so that pending handlers finish and release sessions.
  void close_everything() {
    closing_ = true;
    boost::system::error_code ignored;
    acceptor_.close(ignored);
    drain_timer_.cancel();
    scheduler_.abort_all();
    for (auto& [session, weak] : sessions_)
      if (auto alive = weak.lock()) alive->close();
  }

  void remove_session(Session* session) override {
    sessions_.erase(session);
    if (draining_ && !closing_ && sessions_.empty()) io_.stop();
  }
  bool draining() const override { return draining_; }
  std::size_t max_body() const override { return options_.max_body; }
  std::chrono::steady_clock::duration idle_timeout() const override { return options_.idle_timeout; }

  void handle(Session& session, std::shared_ptr<Session> self, HttpRequest& request) override;

 private:
  void do_accept() {
    acceptor_.async_accept([this](beast::error_code ec, tcp::socket socket) {
      if (ec) {
        if (ec == asio::error::operation_aborted || !acceptor_.is_open()) return;
        return accept_backoff_.failed(ec, [this] {
          if (acceptor_.is_open()) do_accept();
        });
      }
      accept_backoff_.succeeded();
      socket.set_option(tcp::no_delay(true), ec);
      auto session = std::make_shared<Session>(std::move(socket), *this);
      sessions_.emplace(session.get(), session);
      session->start();
      do_accept();
    });
  }

  void begin_shutdown() {
    if (draining_) return;
    draining_ = true;
    log_ << "retrace serve: stopping; finishing in-flight requests (up to "
         << options_.drain_timeout.count() << " ms)" << std::endl;
    boost::system::error_code ignored;
    acceptor_.close(ignored);
    for (auto& [session, weak] : sessions_)
      if (auto alive = weak.lock()) alive->close_if_idle();
    if (sessions_.empty()) {
      io_.stop();
      return;
    }
    drain_timer_.expires_after(options_.drain_timeout);
    drain_timer_.async_wait([this](beast::error_code ec) {
      if (ec) return;
      log_ << "retrace serve: drain timeout; closing " << sessions_.size() << " connections" << std::endl;
      io_.stop();
    });
  }

  std::string models_body() const;
  std::string tokenize_body(std::string_view request_body) const;
  std::string next_request_id(Endpoint endpoint);

  asio::io_context& io_;
  const ServeOptions& options_;
  std::ostream& log_;
  Model model_;
  AnswerBook answers_;
  Metrics metrics_;
  Scheduler scheduler_;
  tcp::acceptor acceptor_;
  net::AcceptBackoff accept_backoff_;
  std::optional<StopOnSignals> signals_;  // from listen() on, once the port is announced
  asio::steady_timer drain_timer_;
  std::unordered_map<Session*, std::weak_ptr<Session>> sessions_;
  bool draining_ = false;
  bool closing_ = false;
  std::uint64_t request_counter_ = 0;
  const std::int64_t started_ = std::int64_t(std::time(nullptr));
};

// "cmpl-", "chatcmpl-", "resp_" or "msg_" and 32 hex digits, unique per request of this server.
std::string Server::next_request_id(Endpoint endpoint) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::uint64_t a = std::uint64_t(started_) * 0x9e3779b97f4a7c15ull ^ request_counter_;
  std::string id = endpoint == Endpoint::chat        ? "chatcmpl-"
                   : endpoint == Endpoint::responses ? "resp_"
                   : endpoint == Endpoint::messages  ? "msg_"
                                                     : "cmpl-";
  for (int half = 0; half < 2; ++half) {
    a = (a ^ (a >> 31)) * 0xbf58476d1ce4e5b9ull + 0x632be59bd9b4e019ull;
    for (int i = 0; i < 16; ++i) id += kHex[(a >> (4 * i)) & 15];
  }
  return id;
}

std::string Server::models_body() const {
  std::string body = "{\"object\":\"list\",\"data\":[";
  std::vector<std::string> names{options_.model_name};
  names.insert(names.end(), options_.more_model_names.begin(), options_.more_model_names.end());
  for (const auto& name : names) {
    if (&name != &names.front()) body += ',';
    body += "{\"id\":";
    put_string(body, name);
    body += ",\"object\":\"model\",\"created\":";
    put_number(body, started_);
    body += ",\"owned_by\":\"retrace-simulator\",\"root\":";
    put_string(body, name);
    body += ",\"parent\":null,\"max_model_len\":";
    put_number(body, options_.max_model_len);
    body += ",\"description\":\"retrace built-in simulator (retrace serve): a deterministic toy model for "
            "testing, not a real LLM. Batch variance ";
    body += options_.batch_variance ? "on" : "off";
    body += ", prefix cache ";
    body += options_.prefix_cache ? (options_.cache_variance ? "on with cache variance" : "on") : "off";
    body += ", weights seed ";
    put_number(body, options_.weights_seed);
    body += ".\"}";
  }
  body += "]}";
  return body;
}

// vLLM's /tokenize answer: {"tokens": [...], "count": N, "max_model_len": M}.
std::string Server::tokenize_body(std::string_view request_body) const {
  std::vector<TokenId> tokens = model_.tokenizer().encode(parse_tokenize(request_body, options_));
  std::string body = "{\"tokens\":";
  put_token_ids(body, tokens);
  body += ",\"count\":";
  put_number(body, tokens.size());
  body += ",\"max_model_len\":";
  put_number(body, options_.max_model_len);
  body += '}';
  return body;
}

void Server::handle(Session& session, std::shared_ptr<Session> self, HttpRequest& request) {
  std::string_view target = request.target();
  std::string_view path = target.substr(0, target.find('?'));
  const bool get = request.method() == http::verb::get;
  const bool post = request.method() == http::verb::post;
  auto wrong_method = [&](std::string_view allowed) {
    session.respond_error({405,
                           "Method " + std::string(request.method_string()) + " is not allowed on " +
                               std::string(path) + "; use " + std::string(allowed) + ".",
                           {}, "method_not_allowed"});
  };

  Endpoint endpoint;
  if (path == "/v1/completions") {
    endpoint = Endpoint::completions;
  } else if (path == "/v1/chat/completions") {
    endpoint = Endpoint::chat;
  } else if (path == "/v1/responses") {
    endpoint = Endpoint::responses;
  } else if (path == "/v1/messages") {
    endpoint = Endpoint::messages;
  } else if (path == "/v1/models") {
    return get ? session.respond(200, "application/json", models_body()) : wrong_method("GET");
  } else if (path == "/health") {
    return get ? session.respond(200, "application/json", "{}") : wrong_method("GET");
  } else if (path == "/version") {
    return get ? session.respond(200, "application/json",
                                 std::string("{\"version\":\"retrace-sim ") + kToolVersion + "\"}")
               : wrong_method("GET");
  } else if (path == "/tokenize") {
    if (!post) return wrong_method("POST");
    try {
      return session.respond(200, "application/json", tokenize_body(request.body()));
    } catch (const ApiError& error) {
      return session.respond_error(error);
    }
  } else if (path == "/v1/embeddings") {
    if (!post) return wrong_method("POST");
    try {
      return session.respond(200, "application/json", embeddings_body(request.body(), model_, options_));
    } catch (const ApiError& error) {
      return session.respond_error(error);
    }
  } else if (path == "/metrics") {
    return get ? session.respond(200, std::string(kPrometheusContentType), metrics_.prometheus(options_.model_name))
               : wrong_method("GET");
  } else {
    return session.respond_error({404,
                                  "Unknown request URL: " + std::string(request.method_string()) + " " +
                                      std::string(path) +
                                      ". retrace serve answers POST /v1/completions, POST /v1/chat/completions, "
                                      "POST /v1/responses, POST /v1/messages, POST /v1/embeddings, POST /tokenize, GET /v1/models, /health, /version and /metrics.",
                                  {}, "unknown_url"});
  }
  if (!post) return wrong_method("POST");

  ++request_counter_;
  ParseContext context{model_, answers_, options_,
                       std::uint64_t(options_.clock->now().time_since_epoch().count()) ^ (request_counter_ << 32)};
  ApiRequest api;
  try {
    api = parse_request(endpoint, request.body(), context);
  } catch (const ApiError& error) {
    return session.respond_error(error);
  }

  auto active = std::make_unique<ActiveRequest>(std::move(api), std::move(self), next_request_id(endpoint), model_,
                                                options_);
  if (active->api.stream) session.begin_stream();
  scheduler_.submit(std::move(active));
}

}  // namespace

int serve(const ServeOptions& options, std::ostream& announce, std::ostream& log) {
  if (options.max_batch < 1) throw std::runtime_error("--max-batch must be at least 1");
  if (options.stream_interval < 1) throw std::runtime_error("--stream-interval must be at least 1");
  asio::io_context io(1);
  Server server(io, options, log);
  server.listen(announce);
  // One thread: the log is written from it alone.
  auto on_exception = [&log](std::string_view what) {
    log << "retrace serve: internal error in a connection's handler (" << what
        << "); that connection was closed and serving goes on" << std::endl;
  };
  net::run_handlers(io, on_exception);
  // Stopped (signal, drain done or timed out): close what is left and let its handlers unwind.
  server.close_everything();
  io.restart();
  net::run_handlers(io, on_exception);
  log << "retrace serve: stopped" << std::endl;
  return 0;
}

}  // namespace retrace::sim
