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

#include "record/record.hpp"

namespace retrace::record {

// Exchanges arrive from any worker through submit(); only the trace thread touches the
// TraceWriter. A write failure (a full disk) stops the run: the exchanges of the frame that did
// not reach the file and every later one are counted as lost, and `written` is what a reader
// gets back.
class TraceSink {
 public:
  // Writes the trace header at once: an unwritable path fails here (TraceError), before traffic.
  TraceSink(const std::filesystem::path& path, const TraceHeader& header, WriterOptions options,
            Redactor redactor)
      : writer_(path, header, options), options_(options), redactor_(std::move(redactor)) {}
  ~TraceSink() { close(); }

  // Starts the trace thread. `on_failure` runs on it once, when a write fails.
  void start(std::function<void()> on_failure);
  void submit(CapturedExchange&& captured);  // any thread
  // Writes what is queued, closes the trace. Idempotent.
  void close();

  std::atomic<std::uint64_t> written{0};
  std::atomic<std::uint64_t> tokens{0};
  std::atomic<std::uint64_t> lost{0};
  std::array<std::atomic<std::uint64_t>, kErrorKindCount> errors_by_kind{};  // indexed by ErrorKind
  std::uint64_t bytes() const { return writer_.bytes_written(); }
  const std::string& error() const { return error_; }  // after close()
  const std::string& index_note() const { return writer_.index_note(); }  // after close()

 private:
  void run();
  void flush();
  void fail(const std::string& message);
  void count_unflushed_as_lost();

  TraceWriter writer_;
  WriterOptions options_;
  Redactor redactor_;
  std::function<void()> on_failure_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<CapturedExchange> queue_;  // guarded by mutex_
  bool closing_ = false;                // guarded by mutex_
  bool failed_ = false;                 // trace thread only (then read after join)
  bool writer_closed_ = false;
  std::string error_;
  std::thread thread_;
};

}  // namespace retrace::record
