// The replay engine: worker threads (one io_context each, Beast client, keep-alive pool), the
// schedules, and a writer thread fed by a queue.
//
// Shape (wrk's): plan -> start workers -> wait -> merge -> report. Each worker runs coroutines on
// its own io_context; nothing on the request path locks except the hand-off of a finished
// exchange to the writer (one short mutex section per exchange). Per-exchange state lives in the
// coroutine frame; read buffers come from a per-worker free list.
//
// Timing: all offsets are steady_clock nanoseconds from `run_start`. An exchange's actual send is
// taken before it takes a connection (connecting, when no idle keep-alive connection is at hand,
// is part of the latency a user sees, so it counts in TTFT and e2e).
#include <unistd.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>
#include <condition_variable>
#include <deque>
#include <limits>
#include <sstream>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "net/connection.hpp"
#include "net/errors.hpp"
#include "net/url.hpp"
#include "replay/replay.hpp"
#include "version.hpp"

namespace retrace::replay {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace json = boost::json;
using net::error_code;
using Clock = std::chrono::steady_clock;
constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);
constexpr std::size_t kReadBufferBytes = 64 * 1024;

// A request as it goes out, prepared once before the run (so that a bad --set fails before any
// traffic), except for live-session substitution which needs this run's answers.
struct Prepared {
  std::size_t input_index = 0;
  http::verb verb = http::verb::post;
  std::string method;
  std::string target;  // joined with the base path
  std::vector<HttpHeader> headers;  // as sent (secrets in clear)
  std::string body;
};

struct Chain {
  std::vector<std::size_t> items;       // indices into the prepared list, in session order
  std::vector<std::int64_t> offsets_ns;  // recorded timing: each item's intended offset
  std::int64_t start_ns = 0;            // open loop / recorded: the first item's intended offset
};

// Finished exchanges go to the writer thread through this queue.
class WriteQueue {
 public:
  void push(Exchange exchange) {
    {
      std::lock_guard lock(mutex_);
      queue_.push_back(std::move(exchange));
    }
    ready_.notify_one();
  }
  // Blocks until something is queued or close(); false when closed and drained.
  bool pop_all(std::vector<Exchange>& out) {
    out.clear();  // freeing a batch of token streams takes a while: not while workers wait to push
    std::unique_lock lock(mutex_);
    ready_.wait(lock, [&] { return !queue_.empty() || closed_; });
    if (queue_.empty()) return false;
    out.swap(queue_);
    return true;
  }
  void close() {
    {
      std::lock_guard lock(mutex_);
      closed_ = true;
    }
    ready_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  std::vector<Exchange> queue_;
  bool closed_ = false;
};

// The exchange's deadline timer and the connection it would close (null between attempts).
struct Watchdog {
  net::UpstreamConnection* connection = nullptr;
  bool timed_out = false;
};

struct Shared;

class Worker {
 public:
  Worker(Shared& shared) : shared_(shared), pool_(4096) {}
  asio::io_context& io() { return io_; }
  asio::awaitable<void> run_chain(std::size_t chain_index, bool closed_loop);
  asio::awaitable<void> run_closed_slot();
  asio::awaitable<void> run_launcher(std::vector<std::size_t> chain_indices);
  void stop_now();
  bool stopping() const { return stopping_; }

 private:
  asio::awaitable<std::optional<std::string>> run_exchange(std::size_t prepared_index,
                                                           std::int64_t intended_ns,
                                                           const std::vector<std::optional<std::string>>* answers);
  asio::awaitable<bool> wait_until(std::int64_t offset_ns);
  std::unique_ptr<char[]> take_buffer();
  void give_buffer(std::unique_ptr<char[]> buffer);

  Shared& shared_;
  asio::io_context io_{1};
  net::ConnectionPool pool_;
  std::vector<std::unique_ptr<char[]>> free_buffers_;
  std::unordered_set<net::UpstreamConnection*> active_;
  bool stopping_ = false;
};

// Everything the workers share; read-only during a phase except the atomics and the queue.
struct Shared {
  Shared(const LoadedTrace& input_trace, const Options& run_options, net::Url target_url,
         std::shared_ptr<asio::ssl::context> tls_context)
      : input(input_trace), options(run_options), url(std::move(target_url)),
        tls(std::move(tls_context)) {}
  const LoadedTrace& input;
  const Options& options;
  net::Url url;
  std::shared_ptr<asio::ssl::context> tls;
  std::vector<Prepared> prepared;
  std::vector<Chain> chains;
  std::vector<Label> exchange_labels;
  ScheduleKind kind = ScheduleKind::concurrency;
  bool record = true;  // false during warmup
  Clock::time_point run_start;
  std::int64_t run_start_unix_ns = 0;
  std::atomic<std::size_t> next_chain{0};
  std::atomic<std::size_t> done{0}, errors{0};
  WriteQueue* queue = nullptr;
};

std::int64_t since(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count();
}

std::unique_ptr<char[]> Worker::take_buffer() {
  if (free_buffers_.empty()) return std::make_unique<char[]>(kReadBufferBytes);
  auto buffer = std::move(free_buffers_.back());
  free_buffers_.pop_back();
  return buffer;
}

void Worker::give_buffer(std::unique_ptr<char[]> buffer) {
  if (free_buffers_.size() < 256) free_buffers_.push_back(std::move(buffer));
}

void Worker::stop_now() {
  stopping_ = true;
  for (auto* connection : active_) connection->close();
  pool_.clear();
}

// Sleeps until `offset_ns` after the run's start, in short slices so that a stop is seen.
// Returns false when stopping.
asio::awaitable<bool> Worker::wait_until(std::int64_t offset_ns) {
  asio::steady_timer timer(io_);
  auto deadline = shared_.run_start + std::chrono::nanoseconds(offset_ns);
  while (!stopping_) {
    auto now = Clock::now();
    if (now >= deadline) co_return true;
    timer.expires_at(std::min(deadline, now + std::chrono::milliseconds(50)));
    co_await timer.async_wait(kTuple);
  }
  co_return false;
}

asio::awaitable<void> Worker::run_closed_slot() {
  while (!stopping_) {
    auto index = shared_.next_chain.fetch_add(1);
    if (index >= shared_.chains.size()) break;
    co_await run_chain(index, true);
  }
}

asio::awaitable<void> Worker::run_launcher(std::vector<std::size_t> chain_indices) {
  for (auto index : chain_indices) {
    if (!co_await wait_until(shared_.chains[index].start_ns)) break;
    asio::co_spawn(io_, run_chain(index, false), asio::detached);
  }
}

asio::awaitable<void> Worker::run_chain(std::size_t chain_index, bool closed_loop) {
  const auto& chain = shared_.chains[chain_index];
  std::vector<std::optional<std::string>> answers;
  bool live = shared_.options.live_sessions && shared_.record;
  for (std::size_t k = 0; k < chain.items.size() && !stopping_; ++k) {
    std::int64_t intended;
    if (closed_loop) {
      intended = since(shared_.run_start);  // the moment the slot (or the previous turn) freed
    } else if (shared_.kind == ScheduleKind::recorded) {
      intended = chain.offsets_ns[k];
      if (!co_await wait_until(intended)) break;
    } else {
      intended = k == 0 ? chain.start_ns : since(shared_.run_start);
    }
    auto answer = co_await run_exchange(chain.items[k], intended, live ? &answers : nullptr);
    if (live) answers.push_back(std::move(answer));
  }
}

std::string header_value(const http::fields& fields, http::field field) {
  auto it = fields.find(field);
  return it == fields.end() ? std::string() : std::string(it->value());
}

// One request and its response. Returns choice 0's text when it completed (for live sessions).
asio::awaitable<std::optional<std::string>> Worker::run_exchange(
    std::size_t prepared_index, std::int64_t intended_ns,
    const std::vector<std::optional<std::string>>* answers) {
  const Prepared& prepared = shared_.prepared[prepared_index];
  const Exchange& source = shared_.input.exchanges[prepared.input_index];
  const Options& options = shared_.options;

  Exchange exchange;
  exchange.source_id = source.id;
  exchange.session_id = source.session_id;
  exchange.expected = source.expected;
  // The input's own labels (a dataset's `id`, ...) stay; the run's labels win on a clash.
  exchange.labels = source.labels;
  for (const auto& label : shared_.exchange_labels) {
    auto same = std::find_if(exchange.labels.begin(), exchange.labels.end(),
                             [&](const Label& l) { return l.key == label.key; });
    if (same != exchange.labels.end()) same->value = label.value;
    else exchange.labels.push_back(label);
  }
  exchange.intended_send_ns = intended_ns;
  exchange.request.method = prepared.method;
  exchange.request.target = prepared.target;
  exchange.request.body = answers && !answers->empty()
                              ? substitute_session_answers(prepared.body, *answers)
                              : prepared.body;
  exchange.request.headers.reserve(prepared.headers.size());
  for (const auto& header : prepared.headers)
    exchange.request.headers.push_back(
        {header.name, is_secret_header(header.name) ? std::string(kRedacted) : header.value});
  exchange.key = request_key(exchange.request.method, exchange.request.target, exchange.request.body);

  http::request<http::string_body> request{prepared.verb, prepared.target, 11};
  for (const auto& header : prepared.headers) request.insert(header.name, header.value);
  request.keep_alive(true);
  request.body() = exchange.request.body;
  if (!request.body().empty() || prepared.verb == http::verb::post) request.prepare_payload();

  auto dialect = llm::detect_dialect(prepared.target, exchange.request.body);
  llm::ResponseDecoder decoder(dialect);
  llm::SseParser sse;
  auto buffer = take_buffer();
  auto timeout = std::chrono::duration_cast<Clock::duration>(options.timeout);
  auto url_text = shared_.url.str();

  net::Phase phase = net::Phase::connect;
  error_code ec;
  bool complete = false;
  std::optional<std::string> answer;

  // Connection set-up counts: a user's request waits for it too.
  auto send_time = Clock::now();
  exchange.actual_send_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(send_time - shared_.run_start).count();
  exchange.start_unix_ns = shared_.run_start_unix_ns + exchange.actual_send_ns;
  auto offset = [&] {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - send_time).count();
  };

  // One deadline for the whole exchange, connecting included, kept by one timer per exchange
  // that closes the connection when it fires. (Beast's tcp_stream timeout would re-arm and
  // cancel a timer on every read of the token stream: a timer-queue insert, a cancel and a
  // handler run per read.) Connecting keeps its own timeout.
  auto deadline = send_time + timeout;
  auto watchdog = std::make_shared<Watchdog>();
  asio::steady_timer watchdog_timer(io_, deadline);
  watchdog_timer.async_wait([watchdog](error_code wait_ec) {
    if (wait_ec || !watchdog->connection) return;
    watchdog->timed_out = true;
    watchdog->connection->close();
  });

  // A connection reused from the pool may have been closed by the server while idle; such a
  // failure before any response byte is retried once on a fresh connection.
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto connection = pool_.take(shared_.url);
    bool reused = connection != nullptr;
    if (!connection) {
      connection = std::make_unique<net::UpstreamConnection>(io_.get_executor(), shared_.url,
                                                             shared_.tls);
      active_.insert(connection.get());
      auto [connect_ec, connect_phase] = co_await asio::async_initiate<
          decltype(kTuple), void(error_code, net::Phase)>(
          [&](auto handler) {
            auto shared_handler = std::make_shared<decltype(handler)>(std::move(handler));
            connection->async_connect(timeout, [shared_handler](error_code e, net::Phase p) {
              (*shared_handler)(e, p);
            });
          },
          kTuple);
      ec = connect_ec;
      phase = connect_phase;
      if (ec) {
        active_.erase(connection.get());
        if (stopping_) ec = asio::error::operation_aborted;
        break;
      }
    } else {
      active_.insert(connection.get());
    }

    if (stopping_) {
      ec = asio::error::operation_aborted;
      active_.erase(connection.get());
      break;
    }
    connection->expires_never();
    if (Clock::now() >= deadline) {
      ec = beast::error::timeout;
      phase = net::Phase::write_request;
      active_.erase(connection.get());
      connection->close();
      break;
    }
    watchdog->connection = connection.get();

    phase = net::Phase::write_request;
    std::tie(ec, std::ignore) = co_await connection->visit(
        [&](auto& stream) { return http::async_write(stream, request, kTuple); });
    http::response_parser<http::buffer_body> parser;
    parser.body_limit(boost::none);
    parser.header_limit(64 * 1024);
    // Parse every chunk already buffered into the body buffer in one read: not eager, Beast
    // returns after each chunk, and a token stream is one chunk per token.
    parser.eager(true);
    if (!ec) {
      phase = net::Phase::read_header;
      std::tie(ec, std::ignore) = co_await connection->visit([&](auto& stream) {
        return http::async_read_header(stream, connection->buffer(), parser, kTuple);
      });
    }
    if (ec && reused && attempt == 0 && !stopping_ && !watchdog->timed_out &&
        (phase == net::Phase::write_request || ec == http::error::end_of_stream ||
         ec == asio::error::connection_reset || ec == asio::error::eof)) {
      watchdog->connection = nullptr;
      active_.erase(connection.get());
      connection->close();
      continue;  // stale keep-alive connection
    }
    if (!ec) {
      exchange.first_byte_ns = offset();
      const auto& head = parser.get();
      exchange.response.status = static_cast<std::uint16_t>(head.result_int());
      for (const auto& field : head)
        exchange.response.headers.push_back(
            {std::string(field.name_string()),
             is_secret_header(field.name_string()) ? std::string(kRedacted)
                                                   : std::string(field.value())});
      auto content_type = header_value(head, http::field::content_type);
      exchange.response.streamed = content_type.find("text/event-stream") != std::string::npos;
      phase = net::Phase::read_body;
      while (!parser.is_done()) {
        parser.get().body().data = buffer.get();
        parser.get().body().size = kReadBufferBytes;
        std::tie(ec, std::ignore) = co_await connection->visit([&](auto& stream) {
          return http::async_read_some(stream, connection->buffer(), parser, kTuple);
        });
        if (ec == http::error::need_buffer) ec = {};
        auto got = kReadBufferBytes - parser.get().body().size;
        if (got > 0) {
          auto at = offset();
          std::string_view bytes(buffer.get(), got);
          if (exchange.response.streamed) {
            sse.feed(bytes, [&](const llm::SseEvent& event) {
              exchange.response.events.push_back({at, std::string(event.raw)});
              if (!event.data.empty()) decoder.on_event(event.data, at);
            });
          } else {
            exchange.response.body.append(bytes);
          }
        }
        if (ec) break;
      }
      if (!ec) {
        complete = true;
        exchange.end_ns = offset();
      } else if (exchange.first_byte_ns >= 0) {
        exchange.end_ns = offset();
      }
    }
    watchdog->connection = nullptr;
    // The watchdog closed the socket: report it as the timeout it is, not as an abort.
    if (ec && watchdog->timed_out) ec = beast::error::timeout;
    active_.erase(connection.get());
    if (complete && parser.keep_alive() && !stopping_) {
      ++connection->responses;
      pool_.put(std::move(connection));
    } else {
      connection->close();
    }
    break;
  }
  watchdog_timer.cancel();
  give_buffer(std::move(buffer));

  if (exchange.response.streamed) {
    auto partial = sse.take_partial();
    if (!partial.empty())
      exchange.response.events.push_back({exchange.end_ns >= 0 ? exchange.end_ns : 0, partial});
  } else if (exchange.response.status != 0) {
    decoder.on_body(exchange.response.body, exchange.end_ns >= 0 ? exchange.end_ns : 0);
  }
  if (exchange.response.status != 0) decoder.finish(exchange);

  if (ec) {
    exchange.error.kind = stopping_ && (ec == asio::error::operation_aborted ||
                                        ec == asio::error::bad_descriptor)
                              ? ErrorKind::cut
                              : net::classify(ec, phase);
    if (exchange.error.kind == ErrorKind::none) exchange.error.kind = ErrorKind::protocol;
    exchange.error.message = exchange.error.kind == ErrorKind::cut
                                 ? "cut: the run was stopped (interrupt) while this was in flight"
                                 : net::describe(ec, phase, url_text);
    if (!complete && exchange.end_ns < 0 && exchange.first_byte_ns < 0) exchange.end_ns = -1;
  } else if (exchange.response.status >= 400) {
    exchange.error.kind = ErrorKind::http_status;
    auto excerpt = exchange.response.streamed ? std::string() : exchange.response.body.substr(0, 200);
    exchange.error.message = "HTTP " + std::to_string(exchange.response.status) +
                             (excerpt.empty() ? "" : ": " + excerpt);
  } else if (!exchange.choices.empty()) {
    answer = llm::choice_text(exchange.choices.front());
  }

  if (exchange.error.kind != ErrorKind::none) shared_.errors.fetch_add(1);
  shared_.done.fetch_add(1);
  if (shared_.record) shared_.queue->push(std::move(exchange));
  co_return answer;
}

// ----------------------------------------------------------------------------------------------
// Planning

const std::unordered_set<std::string>& hop_by_hop() {
  static const std::unordered_set<std::string> names = {
      "host", "content-length", "connection", "keep-alive", "transfer-encoding", "te",
      "trailer", "upgrade", "proxy-connection", "accept-encoding", "expect"};
  return names;
}

std::string lower(std::string_view text) {
  std::string out(text);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::vector<Prepared> prepare_requests(const LoadedTrace& input, const std::vector<std::size_t>& chosen,
                                       const Options& options, const net::Url& url) {
  std::vector<Prepared> prepared;
  prepared.reserve(chosen.size());
  std::unordered_set<std::string> overridden;
  for (const auto& header : options.headers) overridden.insert(lower(header.name));
  if (options.api_key) overridden.insert("authorization");

  for (auto index : chosen) {
    const auto& source = input.exchanges[index];
    Prepared p;
    p.input_index = index;
    p.method = source.request.method.empty() ? "POST" : source.request.method;
    p.verb = http::string_to_verb(p.method);
    if (p.verb == http::verb::unknown)
      throw std::invalid_argument("exchange " + std::to_string(source.id) + ": unknown method '" +
                                  p.method + "'; use --filter to leave it out");
    auto target = source.request.target.empty() ? std::string("/") : source.request.target;
    if (target.front() != '/') target.insert(target.begin(), '/');
    p.target = url.join(target);
    p.headers.push_back({"Host", url.host_header()});
    for (const auto& header : source.request.headers) {
      auto name = lower(header.name);
      // Recorded secrets are redacted: resending "[redacted]" would only fail; --api-key-env or
      // --header supplies real ones.
      if (hop_by_hop().count(name) || is_secret_header(name) || overridden.count(name)) continue;
      p.headers.push_back(header);
    }
    for (const auto& header : options.headers) p.headers.push_back(header);
    if (options.api_key) p.headers.push_back({"Authorization", "Bearer " + *options.api_key});
    bool has_type = std::any_of(p.headers.begin(), p.headers.end(), [](const HttpHeader& h) {
      return lower(h.name) == "content-type";
    });
    if (!has_type && !source.request.body.empty())
      p.headers.push_back({"Content-Type", "application/json"});

    std::string body = source.request.body;
    auto dialect = llm::detect_dialect(target, body);
    if (options.token_ids != llm::TokenIdMode::off)
      body = llm::add_token_id_fields(body, dialect, options.token_ids);
    try {
      body = apply_body_overrides(body, options.set, options.unset);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument("exchange " + std::to_string(source.id) + " (" +
                                  source.request.target + "): " + e.what());
    }
    p.body = std::move(body);
    prepared.push_back(std::move(p));
  }
  return prepared;
}

std::vector<Chain> make_chains(const LoadedTrace& input, const std::vector<Prepared>& prepared,
                               const Options& options) {
  std::vector<Chain> chains;
  bool sessions = options.sessions || options.live_sessions;
  std::unordered_map<std::string, std::size_t> chain_of_session;
  for (std::size_t i = 0; i < prepared.size(); ++i) {
    const auto& session = input.exchanges[prepared[i].input_index].session_id;
    if (sessions && !session.empty()) {
      auto [it, inserted] = chain_of_session.try_emplace(session, chains.size());
      if (inserted) chains.emplace_back();
      chains[it->second].items.push_back(i);
    } else {
      chains.emplace_back().items.push_back(i);
    }
  }
  const auto& schedule = options.schedule;
  if (schedule.kind == ScheduleKind::rate) {
    auto offsets = arrival_offsets_ns(chains.size(), schedule, options.seed);
    for (std::size_t c = 0; c < chains.size(); ++c) chains[c].start_ns = offsets[c];
  } else if (schedule.kind == ScheduleKind::recorded) {
    // The recorded send offsets, else wall-clock starts; relative to the earliest chosen one.
    bool have_offsets = std::any_of(prepared.begin(), prepared.end(), [&](const Prepared& p) {
      return input.exchanges[p.input_index].actual_send_ns != 0;
    });
    auto when = [&](const Prepared& p) {
      const auto& e = input.exchanges[p.input_index];
      return have_offsets ? e.actual_send_ns : e.start_unix_ns;
    };
    std::int64_t first = std::numeric_limits<std::int64_t>::max();
    for (const auto& p : prepared) first = std::min(first, when(p));
    double speed = schedule.speed > 0 ? schedule.speed : 1;
    for (auto& chain : chains) {
      for (auto item : chain.items)
        chain.offsets_ns.push_back(
            static_cast<std::int64_t>(static_cast<double>(when(prepared[item]) - first) / speed));
      chain.start_ns = chain.offsets_ns.front();
    }
    std::stable_sort(chains.begin(), chains.end(),
                     [](const Chain& a, const Chain& b) { return a.start_ns < b.start_ns; });
  }
  return chains;
}

// ----------------------------------------------------------------------------------------------
// Server info: GET /v1/models and /metrics, each bounded by a short timeout.

struct Fetched {
  int status = 0;
  std::string body;
};

Fetched fetch(const net::Url& url, const std::shared_ptr<asio::ssl::context>& tls,
              std::string_view path, Clock::duration timeout) {
  asio::io_context io;
  Fetched result;
  auto task = [&]() -> asio::awaitable<void> {
    net::UpstreamConnection connection(io.get_executor(), url, tls);
    auto [ec, phase] = co_await asio::async_initiate<decltype(kTuple), void(error_code, net::Phase)>(
        [&](auto handler) {
          auto shared_handler = std::make_shared<decltype(handler)>(std::move(handler));
          connection.async_connect(timeout, [shared_handler](error_code e, net::Phase p) {
            (*shared_handler)(e, p);
          });
        },
        kTuple);
    if (ec) co_return;
    connection.expires_after(timeout);
    http::request<http::empty_body> request{http::verb::get, url.join(path), 11};
    request.set(http::field::host, url.host_header());
    request.set(http::field::user_agent, std::string("retrace/") + kToolVersion);
    request.keep_alive(false);
    std::tie(ec, std::ignore) = co_await connection.visit(
        [&](auto& stream) { return http::async_write(stream, request, kTuple); });
    if (ec) co_return;
    http::response_parser<http::string_body> parser;
    parser.body_limit(16 * 1024 * 1024);
    std::tie(ec, std::ignore) = co_await connection.visit([&](auto& stream) {
      return http::async_read(stream, connection.buffer(), parser, kTuple);
    });
    if (ec) co_return;
    result.status = static_cast<int>(parser.get().result_int());
    result.body = std::move(parser.get().body());
    connection.close();
  };
  asio::co_spawn(io, task(), asio::detached);
  io.run();
  return result;
}

json::value json_or_string(const std::string& text) {
  json::error_code ec;
  auto value = json::parse(text, ec);
  if (ec) return json::string(text);
  return value;
}

std::string server_info_json(const Fetched& models, const Fetched& metrics_before,
                             const std::optional<Fetched>& metrics_after) {
  json::object info;
  info["models_status"] = models.status;
  info["models"] = models.status == 200 ? json_or_string(models.body) : json::value(nullptr);
  info["metrics_before"] =
      metrics_before.status == 200 ? json::value(json::string(metrics_before.body)) : json::value(nullptr);
  if (metrics_after)
    info["metrics_after"] = metrics_after->status == 200 ? json::value(json::string(metrics_after->body))
                                                         : json::value(nullptr);
  return json::serialize(info);
}

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return {};
  return name;
}

// Runs one phase (warmup or the measured run) on the workers until it is done or stopped.
void run_phase(Shared& shared, std::vector<std::unique_ptr<Worker>>& workers,
               const std::atomic<bool>* stop, const std::function<void()>& on_tick,
               bool& interrupted) {
  shared.next_chain = 0;
  shared.run_start = Clock::now();
  shared.run_start_unix_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                 std::chrono::system_clock::now().time_since_epoch())
                                 .count();
  auto worker_count = workers.size();
  if (shared.kind == ScheduleKind::concurrency) {
    auto slots = static_cast<std::size_t>(std::max(shared.options.schedule.concurrency, 1));
    for (std::size_t s = 0; s < slots; ++s) {
      auto& worker = *workers[s % worker_count];
      asio::co_spawn(worker.io(), worker.run_closed_slot(), asio::detached);
    }
  } else {
    std::vector<std::vector<std::size_t>> per_worker(worker_count);
    for (std::size_t c = 0; c < shared.chains.size(); ++c) per_worker[c % worker_count].push_back(c);
    for (std::size_t w = 0; w < worker_count; ++w)
      asio::co_spawn(workers[w]->io(), workers[w]->run_launcher(std::move(per_worker[w])),
                     asio::detached);
  }
  std::atomic<std::size_t> running{worker_count};
  std::vector<std::thread> threads;
  for (auto& worker : workers)
    threads.emplace_back([&worker, &running] {
      worker->io().restart();
      worker->io().run();
      running.fetch_sub(1);
    });
  bool stop_sent = false;
  while (running.load() > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (on_tick) on_tick();
    if (!stop_sent && stop && stop->load()) {
      stop_sent = true;
      interrupted = true;
      for (auto& worker : workers) {
        Worker* w = worker.get();
        asio::post(w->io(), [w] { w->stop_now(); });
      }
    }
  }
  for (auto& thread : threads) thread.join();
}

}  // namespace

RunResult run_replay(const LoadedTrace& input, const Options& options,
                     const std::filesystem::path& out, const std::atomic<bool>* stop,
                     const std::function<void(const Progress&)>& on_progress) {
  if (options.shard_count == 0 || options.shard_index >= options.shard_count)
    throw std::invalid_argument("bad shard: index must be below count");
  const auto& schedule = options.schedule;
  if (schedule.kind == ScheduleKind::concurrency && schedule.concurrency < 1)
    throw std::invalid_argument("--concurrency must be at least 1");
  if (schedule.kind == ScheduleKind::rate && !(schedule.rate > 0))
    throw std::invalid_argument("--rate must be above 0");
  if (schedule.kind == ScheduleKind::recorded && !(schedule.speed > 0))
    throw std::invalid_argument("--speed must be above 0");

  auto url = net::parse_url(options.target);
  std::shared_ptr<asio::ssl::context> tls;
  if (url.tls()) tls = net::make_client_tls_context({options.ca_file, options.insecure});

  bool sessions = options.sessions || options.live_sessions;
  auto chosen = select_exchanges(input.exchanges, options, sessions);

  Shared shared(input, options, url, tls);
  shared.kind = schedule.kind;
  shared.prepared = prepare_requests(input, chosen, options, url);
  shared.chains = make_chains(input, shared.prepared, options);

  auto run_name = options.run_name.empty() ? out.stem().string() : options.run_name;
  std::vector<Label> labels{{"run", run_name}};
  if (schedule.kind == ScheduleKind::concurrency)
    labels.push_back({"concurrency", std::to_string(schedule.concurrency)});
  if (schedule.kind == ScheduleKind::rate) {
    std::ostringstream rate;
    rate << schedule.rate;
    labels.push_back({"rate", rate.str()});
  }
  if (options.repeat_index > 0) labels.push_back({"repeat", std::to_string(options.repeat_index)});
  for (const auto& label : options.labels) {
    auto same = std::find_if(labels.begin(), labels.end(),
                             [&](const Label& l) { return l.key == label.key; });
    if (same != labels.end()) same->value = label.value;
    else labels.push_back(label);
  }
  shared.exchange_labels = labels;

  // Bounded so that a dead or stalled target costs seconds, not the whole --timeout.
  Clock::duration probe_timeout = std::min<Clock::duration>(options.timeout, std::chrono::seconds(5));
  auto models = fetch(url, tls, "/v1/models", probe_timeout);
  auto metrics_before = fetch(url, tls, "/metrics", probe_timeout);

  TraceHeader header;
  header.tool_version = kToolVersion;
  header.created_unix_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count();
  header.source = Source::replayed;
  header.target = url.str();
  header.settings = settings_json(options);
  header.host = host_name();
  header.labels = labels;
  header.server_info = server_info_json(models, metrics_before, std::nullopt);

  // Fails here, before any traffic, when the destination is not writable.
  auto partial_path = out;
  partial_path += ".partial";
  // With a /metrics to scrape after the run, OUT.partial is re-streamed into OUT at the end (see
  // below) and compressed there at the configured level; during the run, where the writer thread
  // shares the CPU with the workers, the fastest level will do (zstd is most of its cost).
  WriterOptions partial_options = options.writer;
  if (metrics_before.status == 200) partial_options.zstd_level = std::min(partial_options.zstd_level, 1);
  auto writer = std::make_unique<TraceWriter>(partial_path, header, partial_options);

  unsigned thread_count = options.threads ? options.threads : std::thread::hardware_concurrency();
  thread_count = std::max(1u, thread_count);
  if (schedule.kind == ScheduleKind::concurrency)
    thread_count = std::min<unsigned>(thread_count, static_cast<unsigned>(schedule.concurrency));
  std::vector<std::unique_ptr<Worker>> workers;
  for (unsigned t = 0; t < thread_count; ++t) workers.push_back(std::make_unique<Worker>(shared));

  bool interrupted = false;
  Progress progress;
  auto tick = [&] {
    if (!on_progress) return;
    progress.done = shared.done.load();
    progress.errors = shared.errors.load();
    on_progress(progress);
  };

  // Warmup: the first N chosen requests (cycling), closed loop, not recorded.
  if (options.warmup > 0 && !shared.prepared.empty()) {
    std::vector<Chain> warm;
    for (std::size_t i = 0; i < options.warmup; ++i)
      warm.emplace_back().items.push_back(i % shared.prepared.size());
    std::swap(shared.chains, warm);
    shared.kind = ScheduleKind::concurrency;
    shared.record = false;
    progress.total = options.warmup;
    run_phase(shared, workers, stop, {}, interrupted);
    std::swap(shared.chains, warm);
    shared.kind = schedule.kind;
    shared.record = true;
    shared.done = 0;
    shared.errors = 0;
  }

  // The writer thread: assigns ids in arrival order, keeps the small per-exchange metrics.
  WriteQueue queue;
  shared.queue = &queue;
  std::vector<ExchangeMetrics> metrics;
  metrics.reserve(shared.prepared.size());
  std::exception_ptr writer_failure;
  std::thread writer_thread([&] {
    std::vector<Exchange> batch;
    std::uint64_t next_id = 0;
    bool failed = false;
    while (queue.pop_all(batch)) {
      for (auto& exchange : batch) {
        exchange.id = next_id++;
        metrics.push_back(summarize(exchange));
        if (failed) continue;
        try {
          writer->write(exchange);
        } catch (...) {
          writer_failure = std::current_exception();
          failed = true;
        }
      }
    }
  });

  progress.total = shared.prepared.size();
  if (!interrupted) run_phase(shared, workers, stop, tick, interrupted);
  queue.close();
  writer_thread.join();
  workers.clear();
  if (writer_failure) std::rethrow_exception(writer_failure);
  tick();
  writer->close();
  writer.reset();

  // The final header carries the after-scrape: re-stream the run into `out` with it.
  std::optional<Fetched> metrics_after;
  if (metrics_before.status == 200) metrics_after = fetch(url, tls, "/metrics", probe_timeout);
  if (metrics_after) {
    header.server_info = server_info_json(models, metrics_before, metrics_after);
    TraceReader reader(partial_path);
    TraceWriter final_writer(out, header, options.writer);
    Exchange exchange;
    while (reader.next(exchange)) final_writer.write(exchange);
    final_writer.close();
    std::filesystem::remove(partial_path);
  } else {
    std::filesystem::rename(partial_path, out);
  }

  RunResult result;
  result.out = out;
  result.interrupted = interrupted;
  result.stats = compute_stats(schedule.kind != ScheduleKind::concurrency, metrics, options.slo);
  return result;
}

}  // namespace retrace::replay
