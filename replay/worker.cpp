// The Worker's exchanges, each in three steps: describe the request (the record as sent), stream
// it (connect or reuse, send, read the response as it arrives), finish (decode, classify, count,
// hand to the writer). Its schedules (slots, launchers, chains) are worker_schedule.cpp; see
// replay/worker.hpp.
#include "replay/worker.hpp"

#include "replay/feed.hpp"

#include <algorithm>
#include <array>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http.hpp>
#include <exception>
#include <iostream>
#include <utility>

#include "net/arrived_body.hpp"
#include "net/errors.hpp"
#include "replay/deadline.hpp"
#include "replay/response_reader.hpp"
#include "replay/secret_fill.hpp"

namespace retrace::replay {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using net::error_code;

namespace {

std::string header_value(const http::fields& fields, http::field field) {
  auto it = fields.find(field);
  return it == fields.end() ? std::string() : std::string(it->value());
}

// Ends an exchange's watchdog when its transfer ends, by any path, an exception's included: one
// left armed re-arms itself for ever, and its worker's io_context, so the whole run, never ends.
class WatchEnd {
 public:
  explicit WatchEnd(Watchdog& watchdog) : watchdog_(watchdog) {}
  WatchEnd(const WatchEnd&) = delete;
  WatchEnd& operator=(const WatchEnd&) = delete;
  ~WatchEnd() {
    watchdog_.done = true;
    watchdog_.timer.cancel();
  }

 private:
  Watchdog& watchdog_;
};

// Live-session answers rewrite the prepared body (and so its head and key) once there are any.
bool changes_body(const std::vector<std::optional<SessionAnswer>>* answers) {
  return answers && !answers->empty();
}

}  // namespace

// One exchange on its way: the record being filled, the response's decoders, and where the
// transfer stands. Lives in run_exchange's coroutine frame; the steps take it by reference.
struct Flight {
  Flight(Exchange record, const Clock& run_clock, llm::ResponseDecoder response_decoder)
      : clock(run_clock), exchange(std::move(record)), decoder(std::move(response_decoder)) {}
  std::int64_t offset() const { return nanoseconds(clock.now() - send_time); }

  const Clock& clock;
  Exchange exchange;
  llm::ResponseDecoder decoder;  // the worker's, given back when the exchange is finished
  // The body as received, decoded once its last byte is in (net/arrived_body.hpp): in flight, a
  // token costs its bytes compressed and a few bytes of mark per read, not an Event and a Token.
  net::ArrivedBody arrived;
  std::string content_encoding;  // the response's, set with its head
  std::string head;              // the request's head when not the prepared one
  Clock::time_point send_time{};  // unset until stamp_send()
  InFlight::Sent sent;             // the client's load at stamp_send() (Shared::in_flight)
  net::Phase phase = net::Phase::connect;
  error_code ec;
  Expiry expired = Expiry::none;  // with ec timeout: which limit
  bool complete = false;
  bool past_limit = false;  // cut at --max-response-bytes (net::append_within)
  llm::Dialect dialect = llm::Dialect::unknown;  // the decoder's when taken (start_flight)
  bool tokens_from_events = false;  // decode_response's word, handed to the writer (WriteQueue)
  DecodeWants live;                 // what decode_response's decode kept of the tokens
  std::string failure;  // an exception's message: retrace itself could not go on
};

// While a connection carries an exchange, the stop path (active_) and the deadline (the
// watchdog) may close it. Leaving the attempt's scope by any path, an exception included, takes
// both hooks away before the connection can be freed.
class Worker::Hooks {
 public:
  Hooks(Worker& worker, Watchdog& watchdog, net::UpstreamConnection* connection)
      : worker_(worker), watchdog_(watchdog), connection_(connection) {
    worker_.active_.insert(connection_);
  }
  Hooks(const Hooks&) = delete;
  Hooks& operator=(const Hooks&) = delete;
  ~Hooks() {
    if (watchdog_.connection == connection_) watchdog_.connection = nullptr;
    worker_.active_.erase(connection_);
  }
  void arm_watchdog() {
    watchdog_.progress = Watchdog::WaitClock::now();
    watchdog_.connection = connection_;
  }
  void disarm_watchdog() { watchdog_.connection = nullptr; }

 private:
  Worker& worker_;
  Watchdog& watchdog_;
  net::UpstreamConnection* connection_;
};

void report_internal_error(std::string_view what, std::string_view why) {
  // One write: several worker threads may report at once.
  std::cerr << "retrace replay: internal error (" + std::string(why) + "): " + std::string(what) +
                   "; the run goes on\n";
}

void Worker::stop_now() {
  stopping_ = true;
  for (auto* connection : active_) connection->close();
  pool_.clear();
}

// GCC 12 inlines the coroutine frame's allocation (Asio's aligned_alloc) here but not its
// deallocation, and -Wmismatched-new-delete then sees a mismatch that is not one: both are
// Asio's awaitable_frame_base operators.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
asio::awaitable<std::optional<SessionAnswer>> Worker::run_exchange(
    const Prepared& send, std::int64_t intended_ns,
    const std::vector<std::optional<SessionAnswer>>* answers) {
  const PreparedRequest& prepared = *send.request;
  Flight flight = start_flight(send, intended_ns, answers);
  // An exception here would otherwise end the chain (and, closed-loop, its slot) and lose the
  // exchange: it is recorded on the exchange instead (e.g. Beast refusing a header value over
  // 64 KiB, in the request's head or the response's trailer). stream() leaves nothing armed.
  if (flight.failure.empty()) {
    try {
      // --set-secret: the wire gets the environment's values, the record keeps the marker.
      const std::string* sent = &flight.exchange.request.body;
      std::optional<std::string> filled;
      if (changes_body(answers)) filled = fill_secrets(*sent, shared_.options.secret_fills);
      if (filled) sent = &*filled;
      else if (prepared.secret_body && !changes_body(answers)) sent = &*prepared.secret_body;
      if (prepared.sends_redacted && shared_.record) shared_.sent_redacted.fetch_add(1);
      const std::string* head = &request_head(flight, prepared, answers, *sent);
      if (!shared_.record) {  // a warm-up: not trace traffic
        flight.head = marked_as_probe(*head);
        head = &flight.head;
      }
      co_await stream(flight, *head, *sent);
    } catch (const std::exception& e) {
      flight.failure = e.what();
    }
  }
  // What arrived is decoded even when the transfer failed: the tokens before the failure stay.
  // Not while the writer holds too much decoded already (WriteQueue::kHeldBytes). Decoded, a
  // body takes about twice its bytes (its events, their records, the tokens).
  const std::size_t reserved = co_await wait_for_writer(2 * flight.arrived.size());
  try {
    decode_response(flight);
  } catch (const std::exception& e) {
    if (flight.failure.empty()) flight.failure = e.what();
  }
  std::optional<SessionAnswer> answer;
  try {
    answer = finish(flight, answers != nullptr);
  } catch (const std::exception& e) {
    // Out of memory while classifying or queueing: the record cannot be kept; stderr says so.
    report_internal_error("a request's record was lost", e.what());
  }
  if (reserved) shared_.queue->release(reserved);  // the exchange counts as queued now
  give_decoder(std::move(flight.decoder));
  co_return answer;
}
#pragma GCC diagnostic pop

// The head worked out once at preparation, unless live-session answers changed the body.
const std::string& Worker::request_head(Flight& flight, const PreparedRequest& prepared,
                                        const std::vector<std::optional<SessionAnswer>>* answers,
                                        const std::string& body) {
  if (!prepared.head.empty() && !changes_body(answers)) return prepared.head;
  flight.head = wire_head(prepared, body);
  return flight.head;
}

// The exchange's flight, its request described. When describing it throws (live-session answers
// substituted, out of memory), the flight carries the failure with what is known of the request,
// and nothing is sent.
Flight Worker::start_flight(const Prepared& send, std::int64_t intended_ns,
                            const std::vector<std::optional<SessionAnswer>>* answers) {
  std::string failure;
  try {
    auto record = describe_request(send, intended_ns, answers);
    auto dialect = llm::detect_dialect(record.request.target, record.request.body);
    Flight flight(std::move(record), shared_.clock, take_decoder(dialect));
    flight.dialect = dialect;
    return flight;
  } catch (const std::exception& e) {
    failure = e.what();
  }
  const PreparedRequest& prepared = *send.request;
  Exchange record;
  record.source_id = prepared.source_id;
  record.session_id = prepared.session_id;
  record.intended_send_ns = intended_ns;
  record.request.method = prepared.method;
  record.request.target = prepared.target;
  Flight flight(std::move(record), shared_.clock, take_decoder(llm::Dialect::unknown));
  flight.failure = std::move(failure);
  return flight;
}

// The record of the request as sent: the input's identity and labels, this run's body (with
// live-session answers), secret header values redacted, and the key of what was sent.
Exchange Worker::describe_request(const Prepared& send, std::int64_t intended_ns,
                                  const std::vector<std::optional<SessionAnswer>>* answers) const {
  const PreparedRequest& prepared = *send.request;
  Exchange exchange;
  exchange.source_id = prepared.source_id;
  exchange.session_id = prepared.session_id;
  exchange.expected = prepared.expected;
  // The input's own labels (a dataset's `id`, ...) stay; the run's labels win on a clash.
  exchange.labels.reserve(prepared.labels.size() + shared_.exchange_labels.size());
  exchange.labels = prepared.labels;
  for (const auto& label : shared_.exchange_labels) {
    auto same = std::find_if(exchange.labels.begin(), exchange.labels.end(),
                             [&](const Label& l) { return l.key == label.key; });
    if (same != exchange.labels.end()) same->value = label.value;
    else exchange.labels.push_back(label);
  }
  exchange.intended_send_ns = intended_ns;
  exchange.request.method = prepared.method;
  exchange.request.target = prepared.target;
  if (changes_body(answers)) {
    auto sent = substitute_session_answers(prepared.body, *answers);
    exchange.request.body = std::move(sent.body);
    if (sent.newest == ToolTurn::substituted) shared_.tool_turns_substituted.fetch_add(1);
    if (sent.newest == ToolTurn::kept) shared_.tool_turns_kept.fetch_add(1);
  } else {
    exchange.request.body = prepared.body;
  }
  if (prepared.recorded_headers) exchange.request.headers = *prepared.recorded_headers;
  exchange.key = changes_body(answers)
                     ? request_key(exchange.request.method, exchange.request.target, exchange.request.body)
                     : prepared.key;
  return exchange;
}

// Connection set-up counts: a user's request waits for it too.
void Worker::stamp_send(Flight& flight) const {
  flight.send_time = shared_.clock.now();
  flight.exchange.actual_send_ns = nanoseconds(flight.send_time - shared_.run_start);
  flight.exchange.start_unix_ns = shared_.run_start_unix_ns + flight.exchange.actual_send_ns;
  flight.sent = shared_.in_flight.sent();
  flight.exchange.in_flight_at_send = flight.sent.count;
}

// Sends the request and reads the response into the flight, on a pooled connection or a new one.
asio::awaitable<void> Worker::stream(Flight& flight, const std::string& head, const std::string& body) {
  auto timeout = std::chrono::duration_cast<std::chrono::steady_clock::duration>(shared_.options.timeout);
  stamp_send(flight);
  std::optional<Watchdog::WaitClock::time_point> deadline;
  if (shared_.options.request_deadline) deadline = Watchdog::WaitClock::now() + *shared_.options.request_deadline;
  auto watchdog = std::make_shared<Watchdog>(io_, timeout, deadline);
  watch(watchdog);
  WatchEnd watch_end(*watchdog);  // must outlive every use of the watchdog below

  // A connection reused from the pool may have been closed by the server (while idle, or as
  // llama.cpp's server does, right after a streamed response); such a failure before any
  // response byte is retried once, on a fresh connection: another pooled one may be as stale.
  auto& ec = flight.ec;
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto connection = attempt == 0 ? pool_.take(pool_key_) : nullptr;
    bool reused = connection != nullptr;
    if (!reused)
      connection = std::make_unique<net::UpstreamConnection>(io_.get_executor(), shared_.url,
                                                             shared_.tls);
    Hooks hooks(*this, *watchdog, connection.get());  // must not outlive `connection`
    if (!reused && !co_await connect(flight, *connection, *watchdog)) break;
    if (stopping_) {
      ec = asio::error::operation_aborted;
      break;
    }
    connection->expires_never();
    if (watchdog->past(Watchdog::WaitClock::now()) == Expiry::deadline) {
      flight.expired = Expiry::deadline;
      ec = beast::error::timeout;
      flight.phase = net::Phase::write_request;
      connection->close();
      break;
    }
    hooks.arm_watchdog();

    flight.phase = net::Phase::write_request;
    // Head and body in one gathered write: one sendmsg, no serialising per send.
    std::tie(ec, std::ignore) = co_await connection->visit([&](auto& stream) {
      return asio::async_write(
          stream, std::array<asio::const_buffer, 2>{asio::buffer(head), asio::buffer(body)}, kTuple);
    });
    ArrivedPartParser parser;
    parser.get().body().body = &flight.arrived;
    parser.get().body().limit = shared_.options.max_response_bytes;
    parser.body_limit(boost::none);
    parser.header_limit(64 * 1024);
    if (!ec) {
      flight.phase = net::Phase::read_header;
      ec = co_await read_response_part(*connection, parser, true);
    }
    if (ec && reused && attempt == 0 && !stopping_ && watchdog->expired == Expiry::none &&
        (flight.phase == net::Phase::write_request || ec == http::error::end_of_stream ||
         ec == asio::error::connection_reset || ec == asio::error::eof)) {
      hooks.disarm_watchdog();
      connection->close();
      ++flight.exchange.retries;
      ec = {};
      continue;  // stale keep-alive connection
    }
    if (!ec) co_await read_body(flight, *connection, parser, *watchdog);
    hooks.disarm_watchdog();
    // The watchdog closed the socket: report it as the timeout it is, not as an abort.
    if (ec && watchdog->expired != Expiry::none) {
      ec = beast::error::timeout;
      flight.expired = watchdog->expired;
    }
    if (flight.complete && parser.keep_alive() && !stopping_) {
      ++connection->responses;
      pool_.put(std::move(connection));
    } else {
      connection->close();
    }
    break;
  }
  // A connect that timed out: the deadline when it is past, else connecting's own timeout.
  if (ec == beast::error::timeout && flight.expired == Expiry::none)
    flight.expired = watchdog->past(Watchdog::WaitClock::now()) == Expiry::deadline ? Expiry::deadline
                                                                                    : Expiry::idle;
}

// Resolves, connects and handshakes within the timeout (and before the deadline). False (with
// the flight's error) when that failed or the run is stopping.
asio::awaitable<bool> Worker::connect(Flight& flight, net::UpstreamConnection& connection,
                                      const Watchdog& watchdog) {
  auto timeout = watchdog.idle;
  if (watchdog.deadline)
    timeout = std::max<std::chrono::steady_clock::duration>(
        std::chrono::milliseconds(1),
        std::min(timeout, *watchdog.deadline - Watchdog::WaitClock::now()));
  auto [connect_ec, connect_phase] =
      co_await asio::async_initiate<decltype(kTuple), void(error_code, net::Phase)>(
          [&](auto handler) {
            auto shared_handler = std::make_shared<decltype(handler)>(std::move(handler));
            connection.async_connect(timeout, [shared_handler](error_code e, net::Phase p) {
              (*shared_handler)(e, p);
            });
          },
          kTuple);
  flight.ec = connect_ec;
  flight.phase = connect_phase;
  if (flight.ec && stopping_) flight.ec = asio::error::operation_aborted;
  co_return !flight.ec;
}

// The response's head is in `parser`: records it, then reads the body as it arrives, each read's
// bytes stamped with their arrival; events go to the decoder as they complete.
asio::awaitable<void> Worker::read_body(Flight& flight, net::UpstreamConnection& connection,
                                        ArrivedPartParser& parser, Watchdog& watchdog) {
  auto& exchange = flight.exchange;
  auto& ec = flight.ec;
  watchdog.progress = Watchdog::WaitClock::now();  // the head arrived
  exchange.first_byte_ns = flight.offset();
  const auto& head = parser.get();
  exchange.response.status = static_cast<std::uint16_t>(head.result_int());
  for (const auto& field : head)
    exchange.response.headers.push_back(
        {std::string(field.name_string()),
         secret_header(field.name_string()) ? std::string(kRedacted) : std::string(field.value())});
  connection.honour_keep_alive(header_value(head, http::field::keep_alive));
  auto content_type = header_value(head, http::field::content_type);
  exchange.response.streamed = content_type.find("text/event-stream") != std::string::npos;
  flight.content_encoding = header_value(head, http::field::content_encoding);
  if (exchange.response.streamed) flight.arrived.reserve_like(last_stream_);
  flight.phase = net::Phase::read_body;
  auto& taken = parser.get().body();  // the parser puts each part straight into flight.arrived
  ec = co_await read_response_body(connection, parser, [&](error_code part_ec) {
    if (!part_ec) watchdog.progress = Watchdog::WaitClock::now();
    if (taken.taken > 0) flight.arrived.mark_read(std::exchange(taken.taken, 0), flight.offset());
  });
  if (taken.past_limit) {
    flight.past_limit = true;  // the connection is closed, not pooled: complete stays false
    ec = {};
  }
  flight.complete = !ec && !flight.past_limit;
  exchange.end_ns = flight.offset();
  if (exchange.response.streamed) last_stream_ = flight.arrived.size_like();
}

// Turns the body as received into what the trace stores (net::decode_arrived: the rule record
// follows too) and decodes its tokens.
void Worker::decode_response(Flight& flight) {
  auto& exchange = flight.exchange;
  auto end = exchange.end_ns >= 0 ? exchange.end_ns : 0;
  auto& arrived = flight.arrived;
  if (shared_.queue && exchange.response.streamed) shared_.queue->take_spare(exchange.response.events, arrived.size());
  const auto limit = net::decode_limit_for(shared_.options.max_response_bytes, exchange.response.streamed);
  // What is read of the tokens live when the trace derives them (--derive-tokens): their count
  // per part and arrivals (the run's stats: TTFT, ITL, TPOT), their bytes (a live session's
  // answer: finish's want_answer), ids and has_logprob (each part's kind), finish reasons, usage,
  // notes and errors; the writer stores only the parts' shape and token counts, on this decode's
  // word. Nobody reads a logprob value or an alternative, so the decoder converts and builds none
  // (kNoLogprobValues), where the word is sure before decoding (net::live_wants, record's rule
  // too). Else, and without --derive-tokens, the full decode, as the trace stores what it makes.
  const bool lean = shared_.record && shared_.options.writer.derive_tokens && exchange.response.status != 0;
  flight.live = net::live_wants(lean ? kNoLogprobValues : DecodeWants{}, flight.dialect != llm::Dialect::unknown,
                                exchange.response.streamed, arrived, flight.content_encoding, limit, exchange,
                                shared_.options.writer);
  if (flight.live != DecodeWants{}) flight.decoder.set_wants(flight.live);
  auto decoded = net::decode_arrived(arrived, exchange.response.streamed,
                                     flight.content_encoding, exchange.response, &flight.decoder, end, limit);
  arrived = {};  // its bytes are in the response now
  if (!exchange.response.streamed && exchange.response.status != 0 && !decoded.as_received)
    flight.decoder.on_body(exchange.response.body, end);
  if (exchange.response.status != 0) flight.decoder.finish(exchange);
  // Every stored event went to the decoder as it was framed, in the dialect it ended in: the
  // deriver's loop would make the same choices (record::finish_exchange's rule too). Not for a
  // stream stored as received (the decoder saw a prefix), nor a dialect guessed from the stream.
  flight.tokens_from_events = exchange.response.streamed && exchange.response.status != 0 &&
                              !decoded.as_received && flight.dialect != llm::Dialect::unknown &&
                              exchange.dialect == llm::to_string(flight.dialect);
  if (!decoded.note.empty())
    exchange.decode_note =
        exchange.decode_note.empty() ? decoded.note : decoded.note + "; " + exchange.decode_note;
}

// Classifies the outcome, counts it and hands the exchange to the writer. Returns choice 0's
// answer and tool calls when the exchange completed and `want_answer` (live sessions substitute
// them in later turns).
std::optional<SessionAnswer> Worker::finish(Flight& flight, bool want_answer) {
  auto& exchange = flight.exchange;
  auto& ec = flight.ec;
  std::optional<SessionAnswer> answer;
  if (!flight.failure.empty()) {
    if (flight.send_time == Clock::time_point{}) stamp_send(flight);
    if (exchange.first_byte_ns >= 0 && exchange.end_ns < 0) exchange.end_ns = flight.offset();
    exchange.error.kind = ErrorKind::protocol;
    exchange.error.message = "retrace could not complete this exchange: " + flight.failure;
  } else if (ec) {
    exchange.error.kind = stopping_ && (ec == asio::error::operation_aborted ||
                                        ec == asio::error::bad_descriptor)
                              ? ErrorKind::cut
                              : net::classify(ec, flight.phase);
    if (exchange.error.kind == ErrorKind::none) exchange.error.kind = ErrorKind::protocol;
    exchange.error.message = exchange.error.kind == ErrorKind::cut
                                 ? "cut: the run was stopped (interrupt) while this was in flight"
                             : flight.expired != Expiry::none
                                 ? expiry_message(flight.expired, flight.phase, shared_.options, shared_.url.str())
                                 : net::describe(ec, flight.phase, shared_.url.str());
  } else if (flight.past_limit) {
    exchange.error = net::response_limit_error(shared_.options.max_response_bytes);
  } else if (exchange.response.status >= 400) {
    exchange.error.kind = ErrorKind::http_status;
    auto excerpt = exchange.response.streamed ? std::string() : exchange.response.body.substr(0, 200);
    exchange.error.message = "HTTP " + std::to_string(exchange.response.status) +
                             (excerpt.empty() ? "" : ": " + excerpt);
  } else if (want_answer && exchange.error.kind == ErrorKind::none) {
    // The answer and calls only: clients drop the reasoning. (A server_error or truncated answer,
    // set by the decoder's finish(), is not substituted.)
    answer = session_answer(exchange.choices, flight.decoder.tool_call_ids());
    // A live session has one history: of an answer with n > 1 choices, the first is carried on.
    if (answer && std::any_of(exchange.choices.begin(), exchange.choices.end(),
                              [](const Choice& choice) { return choice.index > 0; }))
      exchange.decode_note += std::string(exchange.decode_note.empty() ? "" : "; ") + std::string(kLiveChoiceNote);
  }

  if (flight.sent.count > 0) exchange.in_flight_max = shared_.in_flight.ended(flight.sent);
  if (exchange.error.kind != ErrorKind::none) shared_.errors.fetch_add(1);
  shared_.done.fetch_add(1);
  if (shared_.record) shared_.queue->push(std::move(exchange), flight.tokens_from_events, flight.live);
  return answer;
}

}  // namespace retrace::replay
