// Internal to record/: the trace thread. See record.hpp for the threading picture.
#pragma once

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "metrics/server_join.hpp"
#include "record/record.hpp"
#include "record/trace_output.hpp"

namespace retrace::record {

// Exchanges arrive from any worker through submit(); only the trace thread touches the
// TraceWriter. A write failure (a full disk) stops the run: the exchanges of the frame that did
// not reach the file and every later one are counted as lost, and `written` is what a reader
// gets back.
//
// The queue is bounded by the bytes it holds (bodies, request and response): a submit() that
// finds it at `max_queued_bytes` waits until the trace thread takes the queue, so a trace thread
// short of CPU slows the relay (back-pressure) instead of letting memory grow or dropping a
// completed exchange. An empty queue takes any exchange, however large. Memory held for the
// trace thread is then at most twice the bound plus one exchange: the queue and the batch it
// is working through.
class TraceSink {
 public:
  static constexpr std::size_t kDefaultMaxQueuedBytes = 64u << 20;

  // Writes the trace header at once: an unwritable path fails here (TraceError), before traffic.
  TraceSink(const std::filesystem::path& path, const TraceHeader& header, WriterOptions options,
            Redactor redactor, std::size_t max_queued_bytes = kDefaultMaxQueuedBytes)
      : TraceSink(path, header, options, SegmentOptions{}, Clock::system(),
                  [](const std::string&) {}, std::move(redactor), max_queued_bytes) {}
  // The same into a file or a segment set (trace_output.hpp); `note` gets its segment events.
  TraceSink(const std::filesystem::path& path, const TraceHeader& header, WriterOptions options,
            SegmentOptions segments, const Clock& clock,
            std::function<void(const std::string&)> note, Redactor redactor,
            std::size_t max_queued_bytes = kDefaultMaxQueuedBytes)
      : output_(path, header, options, segments, clock, std::move(note)),
        options_(options),
        redactor_(std::move(redactor)),
        max_queued_bytes_(max_queued_bytes) {}
  ~TraceSink() { close(); }

  // Starts the trace thread. `on_failure` runs on it once, when a write fails.
  void start(std::function<void()> on_failure);
  void submit(CapturedExchange&& captured);  // any thread; waits while the queue is full
  // Any thread (SIGHUP): the trace thread closes the segment and opens the next at once, between
  // two exchanges.
  void request_rotation();
  // Segment events go to `note` from now on (before start(): it then runs on the trace thread).
  void set_note(std::function<void(const std::string&)> note) { output_.set_note(std::move(note)); }
  // Writes what is queued, closes the trace. Idempotent.
  void close();

  // --max-response-bytes, which bounds an exchange decoded too (net::decode_limit_for); set
  // before start().
  std::size_t max_response_bytes = net::kDefaultMaxResponseBytes;
  // The upstream's /metrics scrapes taken since the last call (record --scrape-interval): the
  // trace thread writes them with each batch of exchanges, and at least once a second when idle,
  // and joins each exchange to them (Exchange::server_state, metrics/server_join.hpp); set
  // before start().
  std::function<std::vector<MetricScrape>()> scrapes;
  // Each exchange written, with its capture's tag, on the trace thread; set before start().
  std::function<void(std::uint64_t tag, const Exchange&)> on_written;

  std::atomic<std::uint64_t> written{0};
  std::atomic<std::uint64_t> tokens{0};
  std::atomic<std::uint64_t> lost{0};
  std::atomic<std::uint64_t> queue_full_waits{0};  // submit() calls that waited for room
  // Exchanges in the file by ErrorKind: counted once their frame is flushed, so that they equal
  // what a reader gets back, after a write failure too (record/metrics.hpp).
  std::array<std::atomic<std::uint64_t>, kErrorKindCount> errors_by_kind{};
  // For /metrics (record/metrics.hpp), read from any thread; the trace thread keeps them.
  std::atomic<std::uint64_t> bytes_written{0};  // bytes in the trace (every segment's)
  // When the oldest exchange written but not yet flushed to the file was written (steady clock,
  // ns since its epoch); 0 when every written exchange is flushed.
  std::atomic<std::int64_t> unflushed_since_ns{0};
  std::atomic<bool> write_failed{false};  // a write failed: the trace takes nothing more
  std::uint64_t bytes() const { return output_.bytes(); }
  const std::string& error() const { return error_; }  // after close()
  const std::string& index_note() const { return output_.index_note(); }  // after close()
  // Segments opened and deleted, bytes written, the last flush: atomics for any thread.
  const SegmentCounters& segment_counters() const { return output_.counters; }
  bool segmented() const { return output_.segmented(); }

 private:
  void run();
  bool write_scrapes();  // what `scrapes` gives, written; true when it gave any
  void flush();
  void tick();
  void fail(const std::string& message);
  void count_unflushed_as_lost();
  void note_progress();  // bytes_written and unflushed_since_ns after a write or a flush

  TraceOutput output_;
  WriterOptions options_;
  Redactor redactor_;
  std::function<void()> on_failure_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable room_;        // the trace thread took the queue
  std::deque<CapturedExchange> queue_;  // guarded by mutex_
  std::size_t queued_bytes_ = 0;        // guarded by mutex_
  std::size_t max_queued_bytes_;
  bool closing_ = false;                // guarded by mutex_
  bool failed_ = false;                 // trace thread only (then read after join)
  bool writer_closed_ = false;
  std::deque<ErrorKind> unflushed_kinds_;  // trace thread: written, frame not yet in the file
  std::string error_;
  metrics::ServerSeries series_;  // the trace thread's: the scrapes exchanges are joined to
  std::thread thread_;
};

}  // namespace retrace::record
