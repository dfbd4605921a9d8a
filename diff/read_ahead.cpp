// An exchange source read ahead on its own thread (see read_ahead.hpp). Three batches go round:
// the thread fills free ones, next() hands out a full one's exchanges by swapping, so each
// exchange's storage is reused as TraceReader reuses it, and memory stays at three batches.
#include "diff/read_ahead.hpp"

#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

namespace retrace::diff {

namespace {

constexpr std::size_t kBatch = 64;
constexpr std::size_t kBatches = 3;

struct Batch {
  std::vector<Exchange> exchanges = std::vector<Exchange>(kBatch);
  std::size_t count = 0;
  bool last = false;  // the inner source ended after these
};

class ReadAhead : public ExchangeSource {
 public:
  explicit ReadAhead(ExchangeSource& inner) : inner_(inner) {
    for (std::size_t i = 0; i < kBatches; ++i) free_.push_back(std::make_unique<Batch>());
  }
  ~ReadAhead() override { stop(); }

  const std::string& name() const override { return inner_.name(); }
  void rewind() override {
    stop();
    inner_.rewind();
    start();
  }
  bool next(Exchange& out) override {
    if (!thread_.joinable()) {
      if (ended_) return false;
      start();
    }
    while (!current_ || position_ == current_->count) {
      if (current_ && current_->last) return end();
      std::unique_lock lock(mutex_);
      if (current_) free_.push_back(std::move(current_)), changed_.notify_all();
      changed_.wait(lock, [&] { return !full_.empty() || error_; });
      if (full_.empty()) {
        lock.unlock();
        end();
        std::rethrow_exception(error_);
      }
      current_ = std::move(full_.front());
      full_.pop_front();
      position_ = 0;
    }
    std::swap(out, current_->exchanges[position_++]);
    return true;
  }
  std::string recovery_note() const override { return note_; }

 private:
  void start() {
    ended_ = false;
    stopping_ = false;
    error_ = nullptr;
    note_.clear();
    thread_ = std::thread([this] { fill(); });
  }
  bool end() {
    stop();
    ended_ = true;
    return false;
  }
  void stop() {
    if (!thread_.joinable()) return;
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    changed_.notify_all();
    thread_.join();
    std::lock_guard lock(mutex_);
    if (current_) free_.push_back(std::move(current_));
    while (!full_.empty()) free_.push_back(std::move(full_.front())), full_.pop_front();
    position_ = 0;
  }
  void fill() {
    try {
      for (bool last = false; !last;) {
        std::unique_ptr<Batch> batch;
        {
          std::unique_lock lock(mutex_);
          changed_.wait(lock, [&] { return stopping_ || !free_.empty(); });
          if (stopping_) return;
          batch = std::move(free_.front());
          free_.pop_front();
        }
        batch->count = 0;
        while (batch->count < kBatch && inner_.next(batch->exchanges[batch->count])) ++batch->count;
        last = batch->last = batch->count < kBatch;
        std::lock_guard lock(mutex_);
        if (last) note_ = inner_.recovery_note();
        full_.push_back(std::move(batch));
        changed_.notify_all();
      }
    } catch (...) {
      std::lock_guard lock(mutex_);
      error_ = std::current_exception();
      changed_.notify_all();
    }
  }

  ExchangeSource& inner_;
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::unique_ptr<Batch>> free_, full_;
  bool stopping_ = false;
  std::exception_ptr error_;
  std::string note_;
  // The consumer's side.
  std::unique_ptr<Batch> current_;
  std::size_t position_ = 0;
  bool ended_ = false;
};

}  // namespace

std::unique_ptr<ExchangeSource> read_ahead(ExchangeSource& inner) { return std::make_unique<ReadAhead>(inner); }

}  // namespace retrace::diff
