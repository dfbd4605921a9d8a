#include "record/trace_sink.hpp"

#include <pthread.h>

#include <chrono>

namespace retrace::record {

void TraceSink::start(std::function<void()> on_failure) {
  on_failure_ = std::move(on_failure);
  bytes_written = writer_.bytes_written();  // the header, written by the constructor
  thread_ = std::thread([this] {
    ::pthread_setname_np(::pthread_self(), "rt-trace");  // for top -H and perf
    run();
  });
}

// Only the exchange that finds the queue empty wakes the trace thread: it takes the whole queue
// at once, so a wake per exchange (a futex call on the proxy thread) would be wasted while it is
// busy with earlier ones.
void TraceSink::submit(CapturedExchange&& captured) {
  std::size_t bytes = captured.body.size() + captured.exchange.request.body.size() +
                      captured.chunks.size() * sizeof(CapturedExchange::Chunk);
  bool was_empty;
  {
    std::unique_lock lock(mutex_);
    auto has_room = [&] { return queue_.empty() || queued_bytes_ < max_queued_bytes_ || closing_; };
    if (!has_room()) {
      ++queue_full_waits;
      room_.wait(lock, has_room);
    }
    was_empty = queue_.empty();
    queue_.push_back(std::move(captured));
    queued_bytes_ += bytes;
  }
  if (was_empty) wake_.notify_one();
}

void TraceSink::close() {
  {
    std::lock_guard lock(mutex_);
    closing_ = true;
  }
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
  if (!writer_closed_) {
    writer_closed_ = true;
    try {
      writer_.close();
      note_progress();
    } catch (const std::exception& e) {
      if (error_.empty()) error_ = e.what();
      count_unflushed_as_lost();
    }
  }
}

void TraceSink::run() {
  std::deque<CapturedExchange> batch;
  Exchange exchange;
  std::uint64_t next_id = 0;
  bool unflushed = false;
  std::unique_lock lock(mutex_);
  for (;;) {
    auto ready = [&] { return closing_ || !queue_.empty(); };
    if (!ready()) {
      if (unflushed) {
        // Idle with exchanges in an open frame: close it after flush_ms, as the writer would have
        // on its next write.
        if (!wake_.wait_for(lock, std::chrono::milliseconds(std::max<std::int64_t>(options_.flush_ms, 1)), ready)) {
          lock.unlock();
          flush();
          unflushed = false;
          lock.lock();
          continue;
        }
      } else {
        wake_.wait(lock, ready);
      }
    }
    if (queue_.empty() && closing_) break;
    batch.swap(queue_);
    queued_bytes_ = 0;
    lock.unlock();
    room_.notify_all();
    for (auto& captured : batch) {
      if (failed_) {
        ++lost;
        continue;
      }
      const std::size_t decode_limit = net::decode_limit_for(max_response_bytes, captured.event_stream);
      finish_exchange(std::move(captured), redactor_, next_id++, exchange, decode_limit);
      try {
        writer_.write(exchange);
        ++written;
        unflushed = true;
        unflushed_kinds_.push_back(exchange.error.kind);
        note_progress();
      } catch (const std::exception& e) {
        fail(e.what());
        ++lost;
        count_unflushed_as_lost();
        continue;
      }
      std::uint64_t count = 0;
      for (const auto& choice : exchange.choices) count += choice.tokens.size();
      tokens += count;
    }
    batch.clear();
    lock.lock();
  }
  lock.unlock();
  if (unflushed) flush();
}

void TraceSink::flush() {
  if (failed_) return;
  try {
    writer_.flush();
    note_progress();
  } catch (const std::exception& e) {
    fail(e.what());
    count_unflushed_as_lost();
  }
}

void TraceSink::count_unflushed_as_lost() {
  unflushed_kinds_.clear();  // never counted in errors_by_kind
  std::uint64_t durable = writer_.exchanges_flushed();
  if (written <= durable) return;
  lost += written - durable;
  written = durable;
}

void TraceSink::note_progress() {
  bytes_written.store(writer_.bytes_written(), std::memory_order_relaxed);
  // Exchanges count by kind once their frame is in the file: what a reader gets back.
  auto open_frame = writer_.exchanges_written() - writer_.exchanges_flushed();
  while (unflushed_kinds_.size() > open_frame) {
    ++errors_by_kind[static_cast<std::size_t>(unflushed_kinds_.front())];
    unflushed_kinds_.pop_front();
  }
  if (writer_.exchanges_flushed() >= writer_.exchanges_written()) {
    unflushed_since_ns.store(0, std::memory_order_relaxed);
  } else if (unflushed_since_ns.load(std::memory_order_relaxed) == 0) {
    auto now = std::chrono::steady_clock::now().time_since_epoch();
    unflushed_since_ns.store(std::chrono::duration_cast<std::chrono::nanoseconds>(now).count(),
                             std::memory_order_relaxed);
  }
}

void TraceSink::fail(const std::string& message) {
  write_failed = true;
  failed_ = true;
  error_ = message;
  if (on_failure_) on_failure_();
}

}  // namespace retrace::record
