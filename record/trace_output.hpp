// Internal to record/: where the trace thread writes, one file or a segment set (format/segments.hpp).
//
// Segments (--out DIR/ with --rotate-every and/or --rotate-size): the writer of the open segment,
// closed and the next opened at an exchange boundary when its size estimate reaches
// --rotate-size (so none passes it by more than the last exchange), when it has been open for
// --rotate-every and holds an exchange, or when asked (SIGHUP: always, even empty, as logrotate
// expects a new file). Retention (--max-disk, --keep-for) deletes the oldest *closed* segments,
// never the open one, each deletion noted and counted. Every time here is the injected Clock's
// monotonic time, so a wall clock that jumps neither rotates nor deletes anything early; a
// monotonic jump (ManualClock::advance) rotates once and ages closed segments once.
//
// Only the trace thread calls write/flush/rotate_if_due/close; the counters are atomics any
// thread may read (the admin endpoint's /metrics), and request_rotation() is for any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "base/clock.hpp"
#include "format/trace.hpp"
#include "record/record.hpp"

namespace retrace::record {

// What the segments did, for /metrics (any thread). In one-file mode: one segment opened.
struct SegmentCounters {
  std::atomic<std::uint64_t> segments_opened{0};
  std::atomic<std::uint64_t> segments_deleted{0};
  std::atomic<std::uint64_t> bytes_deleted{0};
  std::atomic<std::uint64_t> bytes_written{0};        // every segment's, as flushed to the files
  std::atomic<std::int64_t> last_flush_unix_ns{0};    // wall time of the last frame flushed
};

class TraceOutput {
 public:
  // Creates the file, or the directory's next segment (continuing a set found there: numbers go
  // on after its last, its set id is kept); applies retention to segments found. Throws
  // TraceError when it cannot be written, or when the directory holds anything but segments.
  // `note` gets one line per segment event (opened, closed, deleted); it may be replaced with
  // set_note() before the trace thread starts.
  TraceOutput(const std::filesystem::path& out, const TraceHeader& header, WriterOptions writer,
              SegmentOptions segments, const Clock& clock,
              std::function<void(const std::string&)> note);
  ~TraceOutput();
  TraceOutput(const TraceOutput&) = delete;
  TraceOutput& operator=(const TraceOutput&) = delete;

  void set_note(std::function<void(const std::string&)> note) { note_ = std::move(note); }

  // Rotates first when due (time, SIGHUP), writes, then rotates when the size is reached.
  void write(const Exchange& exchange);
  // A /metrics scrape (--scrape-interval) into the open segment, among its exchanges.
  void write(const MetricScrape& scrape);
  void flush();
  // Closes the current frame when it is flush_ms old, and rotates when a rotation is due. For the
  // trace thread's idle wake-ups.
  void tick();
  // How long the trace thread may sleep before tick() has work to do on time (rotate-every,
  // keep-for); nullopt when nothing is timed.
  std::optional<std::chrono::nanoseconds> until_due() const;
  void request_rotation() { rotation_asked_ = true; }  // any thread
  bool rotation_asked() const { return rotation_asked_; }
  void close();

  std::uint64_t exchanges_flushed() const;  // every segment's
  std::uint64_t exchanges_written() const;  // every segment's, the open frame's included
  std::uint64_t bytes() const;              // every segment's, written so far
  const std::string& index_note() const { return index_note_; }
  bool segmented() const { return options_.segmented; }
  SegmentCounters counters;

 private:
  void open_next();
  void close_current();
  void rotate(const std::string& why);
  void apply_retention();
  void noted_flush();

  struct Closed {
    std::uint64_t number;
    std::uint64_t bytes;
    Clock::time_point closed_at;
  };

  std::filesystem::path out_;
  TraceHeader header_;
  WriterOptions writer_options_;
  SegmentOptions options_;
  const Clock& clock_;
  std::function<void(const std::string&)> note_;
  std::string set_id_;
  std::unique_ptr<TraceWriter> writer_;
  std::uint64_t number_ = 0;              // of the open segment
  Clock::time_point opened_at_{};
  std::deque<Closed> closed_;             // oldest first: what retention may delete
  std::uint64_t closed_bytes_ = 0;        // of closed_
  std::uint64_t closed_flushed_ = 0;      // exchanges in segments closed this run
  std::uint64_t closed_written_ = 0;      // the same, as written (more when a close failed)
  std::uint64_t closed_written_bytes_ = 0;  // bytes of segments closed this run
  std::string index_note_;
  std::atomic<bool> rotation_asked_{false};
};

}  // namespace retrace::record
