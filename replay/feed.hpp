// A replay that reads its input as it sends it. A run that sends the trace in its own order, one
// request at a time (closed loop or an arrival rate; no sessions, recorded timing or time window),
// holds a bounded window of prepared requests instead of the whole trace and a prepared copy of
// each of its requests: memory that does not grow with the input (bench/RESULTS.md, "How cost
// grows"). Everything else about the run (selection, preparation, schedule, output) is the loaded
// run's, through the same building blocks.
//
// Two reads: scan_input reads the trace once before any traffic, for what the preflight and the
// run's header need (the chosen requests' models, counts, the input's identity); a Feed's thread
// reads it again during the run, preparing each chosen request a little ahead of the workers (at
// most kFeedAhead wait, taken by the workers one at a time under a mutex). --requests cycles read
// it again from the start, unless one cycle's requests are few enough to keep (kCycleKept).
//
// Any other run (sessions, recorded timing, a time window) is planned from the scan
// (replay/planner.hpp): its feed goes through the plan's chains in the order they start and reads
// each chain's requests from their records' positions (TraceReader::read_request_at), handing
// over whole chains, at most about kFeedAhead requests ahead. Reading a chain costs a frame's
// decompression when it is not in the frame read last: cheap when chains follow the file's order
// (imported conversations, a trace's own time order), a frame a request at worst.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include "replay/planner.hpp"
#include "replay/preflight.hpp"
#include "replay/prepare.hpp"

namespace retrace::replay {

inline constexpr std::size_t kFeedAhead = 256;  // requests prepared and waiting, at most
inline constexpr std::size_t kCycleKept = 16384;

// Whether a run with these options sends its input in the input's order, one request at a time:
// no sessions, no recorded timing, no time window (whose start needs the whole trace's clock).
bool can_stream(const Options& options);

// What one read of the input before the run learnt: for a run that cannot stream, its plan.
struct StreamedInput {
  std::string path;
  TraceHeader header;
  std::size_t exchanges = 0;  // readable exchanges read (all of them unless --limit let it stop)
  std::size_t selected = 0;   // chosen by the order of selection, before --requests cycles them
  InputFacts facts;           // for the preflight
  metrics::TraceIdentity identity;  // input_identity's (read whole for a sharded run)
  std::shared_ptr<const Plan> plan;  // set when !can_stream(options)
  // Requests the run sends: --requests (when anything was chosen), else the selection.
  std::size_t count(const Options& options) const;
};

// Reads `path` as `options` select from it, as far as the selection needs (as load_input would
// read it for a run that cannot stream), and plans that run. A damaged or torn input is named on
// `warnings` as load_input names it; one that holds no readable exchange throws
// std::invalid_argument, a bad filter, trace control or schedule too, and TraceError a file that
// is not a trace.
StreamedInput scan_input(const std::string& path, const Options& options, std::ostream& warnings,
                         std::string_view prefix);

// A planned chain's requests, prepared, with its recorded offsets (recorded timing).
struct FedChain {
  std::vector<Prepared> turns;
  std::vector<std::int64_t> offsets_ns;
};

// One request of a streamed input, prepared, with its open-loop start (ns from the run's start);
// for a planned run, one chain instead.
struct FedRequest {
  Prepared send;  // send.request is null on the marker that follows the last
  std::int64_t start_ns = 0;
  std::shared_ptr<const FedChain> chain;  // a planned run's: `send` is then empty
  std::size_t size() const { return chain ? chain->turns.size() : 1; }
};

class Feed {
 public:
  // Starts a thread that reads `input` again and hands its first `count` chosen requests
  // (cycling) to next(), prepared by `prepare`; with `open_loop`, each carries its arrival time
  // (the whole run's arrival process; shard I of N takes arrivals I, I + N, ...). `options` and
  // `prepare` outlive the feed.
  Feed(const StreamedInput& input, const Options& options, const Preparer& prepare,
       std::size_t count, bool open_loop);
  // A planned run's feed: `chains` (the plan's, or its warmup's; they outlive the feed) in order,
  // each read from input.plan's positions and prepared.
  Feed(const StreamedInput& input, const Options& options, const Preparer& prepare,
       const std::vector<Chain>& chains);
  ~Feed() { finish(); }
  Feed(const Feed&) = delete;
  Feed& operator=(const Feed&) = delete;

  // On any worker's thread: the next request in order; nullopt after the last, or once stopped.
  // It waits (on its own executor) only when none is ready.
  boost::asio::awaitable<std::optional<FedRequest>> next();
  // From any thread: the reading ends, and every next() waiting or to come returns nullopt.
  void stop();
  // Requests prepared and not yet taken (at most kFeedAhead, or one chain's more).
  std::size_t ready() const;
  // stop(), and the thread joined; then why the feed ended before `count` requests (the input
  // changed since the scan), or null.
  std::exception_ptr finish();

 private:
  void produce();
  void produce_in_order();
  void produce_planned();
  // Waits for room (the reading thread sleeps from kFeedAhead ready until half are taken: one
  // wake-up per kFeedAhead / 2 requests, not one per request, which cost ~9 % of the client's
  // CPU); false once stopped.
  bool push(FedRequest request);
  void end(bool stopped);
  // Resumes `count` waiting takers (all: SIZE_MAX). Under the lock.
  void wake(std::size_t count);

  const StreamedInput& input_;
  const Options& options_;
  const Preparer& prepare_;
  std::size_t count_;
  bool open_loop_;
  const std::vector<Chain>* chains_ = nullptr;

  mutable std::mutex mutex_;
  std::condition_variable room_;
  std::deque<FedRequest> ready_;
  std::size_t ready_requests_ = 0;  // in ready_ (a chain counts its turns)
  std::deque<boost::asio::steady_timer*> waiting_;  // takers' wake-up timers, oldest first
  bool reader_waiting_ = false;
  bool ended_ = false, stopped_ = false;

  std::exception_ptr failure_;
  std::thread thread_;
};

}  // namespace retrace::replay
