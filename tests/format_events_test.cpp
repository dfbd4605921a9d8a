// Tests of Events (format/exchange_types.hpp): a streamed response's events as one buffer of
// bytes and a position an event, read as views; built, copied, moved, assigned over, truncated,
// and reused record after record by TraceReader, every byte checked.
#include <catch2/catch.hpp>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "format/trace.hpp"
#include "tests/temp_dir.hpp"

using namespace retrace;

namespace {

// The bytes of event `e` of response `r`: `size` bytes that differ from response to response and
// from event to event, so that a byte read from the wrong place shows.
std::string event_bytes(std::uint64_t r, std::uint64_t e, std::size_t size) {
  std::string bytes(size, '\0');
  std::uint64_t state = (r + 1) * 0x9E3779B97F4A7C15ull ^ (e + 1) * 0xBF58476D1CE4E5B9ull;
  for (char& c : bytes) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    c = static_cast<char>(state >> 56);
  }
  return bytes;
}

// Event sizes growing from 0 B to 100 KB over `count` events (most small, as a stream's are).
std::vector<std::size_t> growing(std::size_t count) {
  std::vector<std::size_t> sizes;
  for (std::size_t e = 0; e < count; ++e) {
    const double at = count > 1 ? static_cast<double>(e) / static_cast<double>(count - 1) : 1.0;
    sizes.push_back(static_cast<std::size_t>(100'000 * at * at * at * at));
  }
  return sizes;
}

Response response_of(std::uint64_t r, const std::vector<std::size_t>& sizes) {
  Response response;
  response.status = 200;
  response.streamed = true;
  for (std::size_t e = 0; e < sizes.size(); ++e)
    response.events.push_back(static_cast<std::int64_t>(1000 * e + r), event_bytes(r, e, sizes[e]));
  return response;
}

// Every event of `response` is response_of(r, sizes)'s, byte for byte.
void check_events(const Response& response, std::uint64_t r, const std::vector<std::size_t>& sizes) {
  REQUIRE(response.events.size() == sizes.size());
  std::size_t total = 0, e = 0;
  for (const Event& event : response.events) {
    const auto want = event_bytes(r, e, sizes[e]);
    INFO("response " << r << " event " << e << " of " << sizes.size());
    REQUIRE(event.offset_ns == static_cast<std::int64_t>(1000 * e + r));
    REQUIRE(event.data.size() == want.size());
    REQUIRE(event.data == want);
    REQUIRE(response.events[e] == event);
    total += want.size();
    ++e;
  }
  CHECK(response.events.bytes().size() == total);
}

}  // namespace

TEST_CASE("thousands of events of growing size keep every byte through copies moves and assignments") {
  constexpr std::size_t kEvents = 2000;  // 0 B to 100 KB, 40 MB in all
  const auto sizes = growing(kEvents);
  Response whole = response_of(1, sizes);
  check_events(whole, 1, sizes);
  CHECK(whole.events.back().data.size() == 100'000);
  CHECK(whole.events.front().data.empty());

  Response copy = whole;  // a copy owns its bytes: positions, not pointers
  whole.events.push_back(7, "tail");
  whole.events.truncate(kEvents / 2);
  check_events(copy, 1, sizes);
  CHECK(copy != whole);

  Response moved = std::move(copy);
  check_events(moved, 1, sizes);

  // Assigned over responses larger and smaller than themselves, and over each other.
  Response small = response_of(2, growing(10));
  Response large = response_of(3, growing(kEvents / 2));
  small = moved;
  check_events(small, 1, sizes);
  moved = response_of(4, {0, 1, 70'000});
  check_events(moved, 4, {0, 1, 70'000});
  large = std::move(moved);
  check_events(large, 4, {0, 1, 70'000});
  small.events.swap(large.events);
  check_events(small, 4, {0, 1, 70'000});
  check_events(large, 1, sizes);
  CHECK(large == Response(large));

  // Truncated, its first events are the same bytes; then it grows again from there.
  large.events.truncate(kEvents / 3);
  Response expected = response_of(1, sizes);
  REQUIRE(large.events.size() == kEvents / 3);
  for (std::size_t e = 0; e < kEvents / 3; ++e) REQUIRE(large.events[e] == expected.events[e]);
  for (std::size_t e = kEvents / 3; e < kEvents; ++e) large.events.push_back(expected.events[e]);
  check_events(large, 1, sizes);

  // Events equal when their arrivals and bytes are, however they were built.
  Events built = {{5, "data: a\n\n"}, {6, ""}, {7, "data: [DONE]\n\n"}};
  Events pushed;
  pushed.reserve(3, 23);
  for (const Event& event : built) pushed.push_back(event);
  CHECK(pushed == built);
  CHECK(pushed.bytes() == "data: a\n\ndata: [DONE]\n\n");
  pushed.truncate(1);
  CHECK(pushed != built);
  CHECK(pushed.back() == Event{5, "data: a\n\n"});
}

TEST_CASE("one exchange reused across thousands of reads of growing size holds each record's bytes") {
  TempDir dir;
  // Record r: 1 to 16 events; the last grows with r, to 100 KB (every eighth record; the others
  // a tenth of that), the others are small: 20 MB in all.
  constexpr std::uint64_t kRecords = 2000;
  auto sizes_of = [](std::uint64_t r) {
    std::vector<std::size_t> sizes(1 + r % 16);
    for (std::size_t e = 0; e < sizes.size(); ++e) sizes[e] = (r * 7 + e * 13) % 300;
    sizes.back() = r % 8 == 0 ? r * 50 : r * 5;
    return sizes;
  };
  {
    TraceWriter writer(dir / "run.rtrace", TraceHeader{}, WriterOptions{.zstd_level = 1});
    Exchange exchange;
    for (std::uint64_t r = 0; r < kRecords; ++r) {
      exchange.id = r;
      exchange.response = response_of(r, sizes_of(r));
      writer.write(exchange);
    }
    writer.close();
  }
  TraceReader reader(dir / "run.rtrace");
  Exchange exchange;
  std::size_t memory = 0, grew = 0;
  std::uint64_t r = 0;
  for (; reader.next(exchange); ++r) {
    REQUIRE(exchange.id == r);
    check_events(exchange.response, r, sizes_of(r));
    // The buffer is reused: it grows only to hold a larger record, never shrinks.
    REQUIRE(exchange.response.events.memory() >= memory);
    grew += exchange.response.events.memory() > memory;
    memory = exchange.response.events.memory();
  }
  CHECK(r == kRecords);
  CHECK(grew < kRecords / 4);
}
