// A mirror leg of `retrace shadow` (the control or the candidate): the requests the primary
// answered, sent again to another server off the client's path. Proxy workers offer() each
// request to a queue bounded by --mirror-queue that never waits: a full queue drops the request
// and counts it, so a mirror that falls behind costs its own pairs, never a client's time. One
// thread per mirror runs an io_context with up to `concurrency` exchanges in flight, on net/'s
// UpstreamConnection and keep-alive pool (the client record and replay use), and hands each
// finished exchange to its leg's trace thread (record's TraceSink) as record's workers do.
//
// What a mirror is sent: the request as the client sent it (method, target, body, headers) less
// the hop-by-hop fields and every secret header (format/redaction.hpp's rule: Authorization, API
// keys, cookies), plus the leg's own credentials (--candidate-header NAME=ENV): never the
// client's. The trace keeps it as sent, redacted like record's.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include "base/clock.hpp"
#include "net/connection.hpp"
#include "record/record.hpp"

namespace retrace::shadow {

enum class Leg : std::uint8_t { primary, control, candidate };
inline constexpr std::size_t kLegCount = 3;
std::string_view to_string(Leg leg);

struct MirrorOptions {
  Leg leg = Leg::candidate;
  net::Url url;
  std::vector<HttpHeader> credentials;  // added to every request, values from the environment
  std::size_t queue = 1024;             // --mirror-queue
  unsigned concurrency = 64;            // exchanges in flight at once
  std::chrono::milliseconds timeout{60'000};  // connect, and each wait for bytes
  std::size_t max_response_bytes = net::kDefaultMaxResponseBytes;
  std::shared_ptr<net::asio::ssl::context> tls;  // for an https:// url
};

// The request a mirror sends: `client`'s headers less hop-by-hop and secret ones, then `credentials`.
std::vector<HttpHeader> mirror_headers(const std::vector<HttpHeader>& client,
                                       const std::vector<HttpHeader>& credentials);

class MirrorExchange;

// Why a request was never sent to a mirror: its queue was full (--mirror-queue; the mirror falls
// behind), or shadow was stopping (refused at the door, or still queued when --drain-timeout ran out).
enum class DropReason { queue_full, stopped };

class Mirror {
 public:
  // `submit` takes each finished exchange (tag set) to the leg's trace thread; `on_dropped` hears
  // of each tag dropped, and why (any thread).
  Mirror(MirrorOptions options, const Clock& clock, Clock::time_point run_start,
         std::function<void(record::CapturedExchange&&)> submit,
         std::function<void(std::uint64_t tag, DropReason why)> on_dropped);
  ~Mirror();
  Mirror(const Mirror&) = delete;
  Mirror& operator=(const Mirror&) = delete;

  void start();
  // Any thread; never waits. False when the queue was full (the request is dropped and counted).
  // The legs share one copy of the client's request.
  bool offer(std::uint64_t tag, std::shared_ptr<const Request> request);
  // Lets the queue and the exchanges in flight finish for up to `drain`, cuts the rest (written
  // as cut), and joins the thread. Idempotent.
  void stop(std::chrono::milliseconds drain);

  const MirrorOptions& options() const { return options_; }
  std::atomic<std::uint64_t> offered{0}, dropped{0}, sent{0}, finished{0};

 private:
  friend class MirrorExchange;
  struct Job {
    std::uint64_t tag = 0;
    std::shared_ptr<const Request> request;
  };
  void pump();                           // io thread: start queued jobs while there is room
  void done(std::uint64_t exchange_id);  // io thread: an exchange handed over its capture

  MirrorOptions options_;
  const Clock& clock_;
  Clock::time_point run_start_;
  std::function<void(record::CapturedExchange&&)> submit_;
  std::function<void(std::uint64_t, DropReason)> on_dropped_;
  std::mutex mutex_;
  std::condition_variable idle_;
  std::deque<Job> queue_;           // guarded by mutex_
  std::size_t active_ = 0;          // guarded by mutex_ (changed on the io thread)
  bool stopping_ = false;           // guarded by mutex_
  std::uint64_t next_exchange_ = 0; // io thread
  std::unordered_map<std::uint64_t, std::weak_ptr<MirrorExchange>> live_;  // io thread: what a cut closes
  net::asio::io_context io_{1};
  std::optional<net::asio::executor_work_guard<net::asio::io_context::executor_type>> work_;
  net::ConnectionPool pool_{Clock::system()};  // after io_: its sockets close first
  std::thread thread_;
};

}  // namespace retrace::shadow
