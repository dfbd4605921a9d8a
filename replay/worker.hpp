// Internal to replay/: what the worker threads share during a phase, the queue to the writer
// thread, and the Worker (one io_context and one keep-alive pool per thread).
//
// Each worker runs coroutines on its own io_context; nothing on the request path locks except the
// hand-off of a finished exchange to the writer (one short mutex section per exchange).
// Per-exchange state lives in the coroutine frame; read buffers come from a per-worker free list.
//
// Timing: all offsets are steady_clock nanoseconds from `run_start`. An exchange's actual send is
// taken before it takes a connection (connecting, when no idle keep-alive connection is at hand,
// is part of the latency a user sees, so it counts in TTFT and e2e).
#pragma once

#include <atomic>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <unordered_set>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

#include "format/token_deriver.hpp"  // QueuedExchange's word, written with write_with_word
#include "llm/llm.hpp"
#include "net/arrived_body.hpp"
#include "net/connection.hpp"
#include "replay/in_flight.hpp"
#include "replay/response_reader.hpp"
#include "net/scrape.hpp"
#include "replay/feed.hpp"
#include "replay/prepare.hpp"

namespace retrace::replay {

// Awaited as a tuple (error, results...) instead of throwing: how the worker's coroutines wait.
inline constexpr auto kTuple = boost::asio::as_tuple(boost::asio::use_awaitable);

// A steady-clock duration in nanoseconds, the unit of every offset from `run_start`.
inline std::int64_t nanoseconds(std::chrono::steady_clock::duration duration) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(duration).count();
}

using Clock = retrace::Clock;

// Finished exchanges go to the writer thread through this queue. The writer is woken once a batch
// is queued (or a few milliseconds after the first of one), not per exchange: a wake-up per
// exchange cost a futex call on each side and a context switch (bench/RESULTS.md, replay (a)).
//
// An exchange in flight is its bytes as received, compressed (net/arrived_body.hpp); decoded, its
// Events and Tokens cost tens of times that, until the writer has written and freed it. held()
// counts what is queued or being written, decoded, and what workers are decoding (reserve()), so
// that a worker decodes its next one only while that is under kHeldBytes: when many long streams
// end at once, they wait compressed, not decoded, and at most kHeldBytes are decoded at once, or
// one exchange larger than that alone (issue 44 item 4: 8 MiB, not 64: 64 long streams in flight
// then cost tens of bytes a token in all, where 64 MiB was 64 bytes a token by itself; and a
// 16,000-token stream with logprobs, ~11 MB decoded, no longer beside another).
// An exchange finished and queued, with its worker's word that its choices are what its stored
// events give fed again into a decoder of its dialect (format/token_deriver.hpp, TokensFromEvents).
// `live`: what of the tokens its decode kept (kNoLogprobValues when the trace derives them).
struct QueuedExchange {
  Exchange exchange;
  bool tokens_from_events = false;
  DecodeWants live;
};

class WriteQueue {
 public:
  static constexpr std::size_t kBatch = 64;
  static constexpr std::chrono::milliseconds kMaxDelay{5};
  static constexpr std::size_t kHeldBytes = 8u << 20;

  void push(Exchange exchange, bool tokens_from_events = false, DecodeWants live = {}) {
    auto cost = decoded_bytes(exchange);
    held_.fetch_add(cost, std::memory_order_relaxed);
    bool wake;
    {
      std::lock_guard lock(mutex_);
      queue_.push_back({std::move(exchange), tokens_from_events, live});
      queued_cost_ += cost;
      wake = queue_.size() == wake_at_;
    }
    if (wake) ready_.notify_one();
  }
  // Blocks until something is queued (then up to kMaxDelay more, for a batch) or close(); false
  // when closed and drained. The last batch is freed first.
  bool pop_all(std::vector<QueuedExchange>& out) {
    out.clear();  // freeing a batch of token streams takes a while: not while workers wait to push
    held_.fetch_sub(batch_cost_, std::memory_order_relaxed);
    batch_cost_ = 0;
    std::unique_lock lock(mutex_);
    wake_at_ = 1;
    ready_.wait(lock, [&] { return !queue_.empty() || closed_; });
    wake_at_ = kBatch;
    ready_.wait_for(lock, kMaxDelay, [&] { return queue_.size() >= kBatch || closed_; });
    wake_at_ = 0;
    if (queue_.empty()) return false;
    out.swap(queue_);
    batch_cost_ = queued_cost_;
    queued_cost_ = 0;
    return true;
  }
  void close() {
    {
      std::lock_guard lock(mutex_);
      closed_ = true;
    }
    ready_.notify_all();
  }
  // Decoded bytes queued or in the batch being written (any thread; a relaxed estimate).
  std::size_t held() const { return held_.load(std::memory_order_relaxed); }
  // Counts `bytes` a worker is about to decode as held, if held() stays within kHeldBytes with
  // them, or nothing is held (an exchange larger than the allowance is decoded alone); false
  // (nothing counted) otherwise. The worker release()s them once it has pushed the exchange.
  bool reserve(std::size_t bytes) {
    auto now = held_.load(std::memory_order_relaxed);
    while (now == 0 || now + bytes <= kHeldBytes)
      if (held_.compare_exchange_weak(now, now + bytes, std::memory_order_relaxed)) return true;
    return false;
  }
  void release(std::size_t bytes) { held_.fetch_sub(bytes, std::memory_order_relaxed); }
  // A long exchange's event storage, given back by the writer once it is written, for the next
  // long one a worker decodes (take_spare): its pages stay mapped, where freed and allocated
  // again they were faulted in anew (the run's blocks over 1 MiB are given back to the system:
  // replay/malloc_policy.cpp). One is kept, the largest, from kSpareBytes to kMostSpareBytes.
  static constexpr std::size_t kSpareBytes = 1u << 20, kMostSpareBytes = 32u << 20;
  void give_back(Events& events) {
    if (events.memory() < kSpareBytes || events.memory() > kMostSpareBytes) return;
    std::lock_guard lock(mutex_);
    if (events.memory() > spare_.memory()) events.swap(spare_);
  }
  // Swaps the spare storage, emptied, into `events` (empty) when it holds `bytes` at least; one
  // too small is freed (not kept beside the storage `events` will allocate).
  void take_spare(Events& events, std::size_t bytes) {
    if (bytes < kSpareBytes || !events.empty()) return;
    std::lock_guard lock(mutex_);
    if (spare_.memory() < bytes) {
      spare_.release();
      return;
    }
    spare_.clear();
    events.swap(spare_);
  }
  // What a decoded exchange holds, roughly: its bodies, its events and its tokens.
  static std::size_t decoded_bytes(const Exchange& exchange) {
    std::size_t bytes = exchange.request.body.size() + exchange.response.body.size() +
                        exchange.response.events.memory();
    for (const auto& choice : exchange.choices) bytes += choice.tokens.size() * sizeof(Token);
    return bytes;
  }

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  std::vector<QueuedExchange> queue_;
  std::size_t wake_at_ = 0;  // the queue's size at which push wakes the writer (0: it is busy)
  bool closed_ = false;
  std::size_t queued_cost_ = 0;  // decoded_bytes of queue_ (under mutex_)
  std::size_t batch_cost_ = 0;   // of the batch the writer holds (writer thread)
  std::atomic<std::size_t> held_{0};
  Events spare_;  // give_back's, under mutex_
};


// What a closed-loop slot or an open-loop launcher takes next: a chain of a loaded run's plan, or
// one request of a streamed input.
struct Work {
  const Chain* chain = nullptr;  // its items index Shared::prepared
  Prepared single;               // without a chain: the one request
  std::int64_t start_ns = 0;     // open loop: when it starts
  std::shared_ptr<const FedChain> fed;  // a planned run's chain, read as it came up
  std::size_t size() const { return chain ? chain->items.size() : fed ? fed->turns.size() : 1; }
  const Prepared& turn(std::size_t k, const std::vector<Prepared>* prepared) const {
    return chain ? (*prepared)[chain->items[k]] : fed ? fed->turns[k] : single;
  }
  std::int64_t offset_ns(std::size_t k) const {
    return chain ? chain->offsets_ns[k] : fed->offsets_ns[k];
  }
};

// Everything the workers share; read-only during a phase except the atomics and the queue.
struct Shared {
  Shared(const Options& run_options, net::Url target_url,
         std::shared_ptr<boost::asio::ssl::context> tls_context)
      : options(run_options), clock(*run_options.clock), url(std::move(target_url)),
        tls(std::move(tls_context)) {}
  const Options& options;
  const Clock& clock;  // every time the run measures and records (send offsets, TTFT, ends)
  net::Url url;
  std::shared_ptr<boost::asio::ssl::context> tls;
  // The phase's work: `chains` of `prepared` requests (a loaded run's plan), or, when `feed` is
  // set, what it hands over.
  const std::vector<Prepared>* prepared = nullptr;
  const std::vector<Chain>* chains = nullptr;
  Feed* feed = nullptr;
  std::vector<Label> exchange_labels;
  ScheduleKind kind = ScheduleKind::concurrency;
  bool record = true;  // false during warmup
  Clock::time_point run_start;
  std::int64_t run_start_unix_ns = 0;
  std::atomic<std::size_t> next_chain{0};
  std::atomic<std::size_t> done{0}, errors{0};
  // Live sessions: tool turns sent back with this run's calls, and kept as recorded
  // (substitute_session_answers), each counted once, when the turn after it is sent.
  std::atomic<std::size_t> tool_turns_substituted{0}, tool_turns_kept{0};
  std::atomic<std::size_t> sent_redacted{0};  // sent with the redaction marker (secret_fill.hpp)
  WriteQueue* queue = nullptr;
  InFlight in_flight;  // requests sent and not yet finished (replay/in_flight.hpp)
  net::Scraper* scraper = nullptr;  // the target's /metrics over the measured run; null: not scraped
};

struct Flight;
struct Watchdog;

// What a worker's thread cannot keep from failing (out of memory, a library's exception where none
// was expected), said on stderr in one line: "retrace replay: internal error (WHY): WHAT; the run
// goes on". Any thread.
void report_internal_error(std::string_view what, std::string_view why);

class Worker {
 public:
  // The pool's idle age is weighed against the upstream's real keep-alive timeout: real time, like
  // the other waits, whatever clock the run records with.
  explicit Worker(Shared& shared)
      : shared_(shared), pool_(retrace::Clock::system(), 4096), pool_key_(net::pool_key(shared.url)) {}
  boost::asio::io_context& io() { return io_; }
  // Closed loop: a slot on io() that takes the next work until none is left.
  void start_closed_slot();
  // Open loop: a launcher on io() that takes the next work and starts it at its start time,
  // until none is left.
  void start_launcher();
  // Stops sending and closes every connection, cutting what is in flight. On io()'s thread.
  void stop_now();
  // --duration: whether a request meant for `intended_ns` (or sent now) would start after the
  // run's sending time is over. Never during warmup.
  bool past_duration(std::int64_t intended_ns) const;

 private:
  class Hooks;

  // co_spawn on io(), an exception out of `work` said on stderr (report_internal_error).
  void spawn(boost::asio::awaitable<void> work, const char* what);
  boost::asio::awaitable<void> run_closed_slot();
  boost::asio::awaitable<void> run_launcher();
  boost::asio::awaitable<std::optional<Work>> next_work();
  boost::asio::awaitable<void> run_chain(Work work, bool closed_loop);
  // One request and its response, counted and handed to the writer. Does not throw: a failure
  // inside retrace becomes the exchange's error. Returns choice 0's text when it completed (for
  // live sessions).
  boost::asio::awaitable<std::optional<SessionAnswer>> run_exchange(
      const Prepared& send, std::int64_t intended_ns,
      const std::vector<std::optional<SessionAnswer>>* answers);
  // run_exchange's steps, in order.
  Flight start_flight(const Prepared& send, std::int64_t intended_ns,
                      const std::vector<std::optional<SessionAnswer>>* answers);
  Exchange describe_request(const Prepared& send, std::int64_t intended_ns,
                            const std::vector<std::optional<SessionAnswer>>* answers) const;
  // `head` and `body` are the request's bytes as sent (PreparedRequest::head, or wire_head of a body
  // with live-session answers or --set-secret values: `body`).
  static const std::string& request_head(Flight& flight, const PreparedRequest& prepared,
                                         const std::vector<std::optional<SessionAnswer>>* answers,
                                         const std::string& body);
  boost::asio::awaitable<void> stream(Flight& flight, const std::string& head, const std::string& body);
  boost::asio::awaitable<bool> connect(Flight& flight, net::UpstreamConnection& connection,
                                       const Watchdog& watchdog);
  boost::asio::awaitable<void> read_body(Flight& flight, net::UpstreamConnection& connection,
                                         ArrivedPartParser& parser, Watchdog& watchdog);
  void decode_response(Flight& flight);
  std::optional<SessionAnswer> finish(Flight& flight, bool want_answer);

  void stamp_send(Flight& flight) const;
  boost::asio::awaitable<bool> wait_until(std::int64_t offset_ns);
  // Waits until the writer's queue can count `decoding` more bytes (WriteQueue::reserve); returns
  // what it counted (0 when nothing is written: a warm-up), for WriteQueue::release.
  boost::asio::awaitable<std::size_t> wait_for_writer(std::size_t decoding);
  // What a worker reuses across its exchanges (worker_pools.cpp): decoders, and each response
  // header name's secret verdict.
  llm::ResponseDecoder take_decoder(llm::Dialect dialect);
  void give_decoder(llm::ResponseDecoder decoder);
  bool secret_header(std::string_view name);

  Shared& shared_;
  boost::asio::io_context io_{1};
  net::ConnectionPool pool_;
  std::string pool_key_;  // the target's, worked out once
  static constexpr std::size_t kSecretNamesKept = 64;
  std::vector<std::pair<std::string, bool>> secret_names_;  // header name, is_secret_header
  net::ArrivedSize last_stream_;  // the last event stream's size: the next one reserves as much
  std::vector<llm::ResponseDecoder> free_decoders_;  // one per exchange in flight, at most
  std::unordered_set<net::UpstreamConnection*> active_;  // connections carrying an exchange
  bool stopping_ = false;
};

}  // namespace retrace::replay
