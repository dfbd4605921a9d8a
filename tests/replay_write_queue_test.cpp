// replay/worker.hpp's WriteQueue: how much decoded a run holds at once (issue 44 item 4). A worker
// decodes a finished exchange only once reserve() lets it; an exchange larger than the writer's
// allowance is decoded alone, never beside another large one.
#include <catch2/catch.hpp>

#include "replay/worker.hpp"

using retrace::replay::WriteQueue;

namespace {
constexpr std::size_t kAllowance = WriteQueue::kHeldBytes;
constexpr std::size_t kLong = 2 * kAllowance;  // a 16,000-token stream with logprobs, decoded
const std::size_t kEmpty = retrace::Events().memory();  // no storage (a string's inline room)
}  // namespace

TEST_CASE("an exchange larger than the allowance is decoded when nothing else is held") {
  WriteQueue queue;
  CHECK(queue.reserve(kLong));
  CHECK(queue.held() == kLong);
  queue.release(kLong);
  CHECK(queue.held() == 0);
}

TEST_CASE("while one exchange is held a second that would pass the allowance waits") {
  WriteQueue queue;
  REQUIRE(queue.reserve(kAllowance / 8));
  CHECK_FALSE(queue.reserve(kLong));
  CHECK_FALSE(queue.reserve(kAllowance));
  CHECK(queue.held() == kAllowance / 8);  // a refused reserve counts nothing
  CHECK(queue.reserve(kAllowance - kAllowance / 8));  // up to the allowance, beside it
  queue.release(kAllowance - kAllowance / 8);
  queue.release(kAllowance / 8);
  CHECK(queue.reserve(kLong));  // alone now
  CHECK_FALSE(queue.reserve(1));  // and nothing beside it
  queue.release(kLong);
}

TEST_CASE("small exchanges are decoded side by side up to the allowance") {
  WriteQueue queue;
  std::size_t reserved = 0;
  while (queue.reserve(kAllowance / 16)) reserved += kAllowance / 16;
  CHECK(reserved == kAllowance);
  CHECK(queue.held() == kAllowance);
}

TEST_CASE("an exchange queued for the writer counts as held until the writer takes the next batch") {
  WriteQueue queue;
  retrace::Exchange exchange;
  exchange.response.body.assign(kLong, 'x');
  queue.push(std::move(exchange));
  CHECK(queue.held() >= kLong);
  CHECK_FALSE(queue.reserve(kAllowance / 16));
  std::vector<retrace::replay::QueuedExchange> batch;
  REQUIRE(queue.pop_all(batch));  // the writer holds it while it writes it
  CHECK_FALSE(queue.reserve(kAllowance / 16));
  queue.close();
  CHECK_FALSE(queue.pop_all(batch));  // written and freed
  CHECK(queue.held() == 0);
  CHECK(queue.reserve(kLong));
}

TEST_CASE("a long exchange's event storage given back is the next long one's emptied") {
  WriteQueue queue;
  retrace::Events written;
  written.reserve(1000, 2 * WriteQueue::kSpareBytes);
  written.push_back(1, "data: {}\n\n");
  const auto memory = written.memory();
  queue.give_back(written);
  CHECK(written.memory() == kEmpty);  // kept, not freed with the exchange

  retrace::Events next;
  queue.take_spare(next, WriteQueue::kSpareBytes + 1);
  CHECK(next.empty());
  CHECK(next.memory() == memory);
  retrace::Events another;
  queue.take_spare(another, WriteQueue::kSpareBytes + 1);
  CHECK(another.memory() == kEmpty);  // one spare, taken once
}

TEST_CASE("short exchanges' event storage is not kept and a spare too small is dropped") {
  WriteQueue queue;
  retrace::Events small;
  small.reserve(10, WriteQueue::kSpareBytes / 2);
  const auto memory = small.memory();
  queue.give_back(small);
  CHECK(small.memory() == memory);  // freed with its exchange, as before

  retrace::Events spare;
  spare.reserve(10, 2 * WriteQueue::kSpareBytes);
  queue.give_back(spare);
  retrace::Events larger;
  queue.take_spare(larger, 4 * WriteQueue::kSpareBytes);
  CHECK(larger.memory() == kEmpty);
  retrace::Events fits;
  queue.take_spare(fits, WriteQueue::kSpareBytes + 1);
  CHECK(fits.memory() == kEmpty);  // the spare too small for the larger one was freed then
}
