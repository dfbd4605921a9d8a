// net/arrived_blocks: a body held as it arrives, compressed in blocks, with its reads' marks as
// varints. Read back it must be every byte and every read's arrival exactly, whatever the sizes
// and wherever the reads and the blocks cut; a body under a block is never compressed, nor one
// under the raw bounds (its own, and every body's in total).
#include <catch2/catch.hpp>

#include <random>

#include "net/arrived_blocks.hpp"

using namespace retrace::net;

namespace {

struct Read {
  std::int64_t offset_ns;
  std::string bytes;
};

// What for_each_read gives back, joined into reads; checks the pieces' order as it goes.
std::vector<Read> read_back(const ArrivedBody& body) {
  std::vector<Read> reads;
  bool open = false;
  body.for_each_read([&](std::string_view piece, std::int64_t offset_ns, bool read_ends) {
    if (!open) reads.push_back({offset_ns, ""});
    REQUIRE(reads.back().offset_ns == offset_ns);
    reads.back().bytes.append(piece);
    open = !read_ends;
    return true;
  });
  REQUIRE_FALSE(open);
  return reads;
}

std::string event(std::mt19937_64& rng, std::size_t i) {
  return "data: {\"id\":\"chatcmpl-1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" t" +
         std::to_string(rng() % 50'000) + "\"},\"token_ids\":[" + std::to_string(i) + "]}]}\n\n";
}

}  // namespace

TEST_CASE("thousands of bodies of growing size read back byte for byte with every read's arrival") {
  std::mt19937_64 rng(44);
  // Sizes from nothing to ~5 blocks, denser around the block boundaries; reads of 1 byte to
  // 3 blocks; arrival times that go back as well as forward (zigzag), and large gaps.
  std::size_t checked = 0;
  for (int n = 0; n < 2500; ++n) {
    // Past 1,500: 1-3 blocks (held raw), or around and past the raw bound (compressed).
    std::size_t size = n < 1500 ? std::size_t(n) * 89
                                : (n % 2 ? ArrivedBody::kMostRawBytes - ArrivedBody::kBlockBytes : 0) +
                                      ArrivedBody::kBlockBytes * (1 + n % 3) + (n % 7) - 3;
    std::string bytes;
    bytes.reserve(size);
    for (std::size_t i = 0; bytes.size() < size; ++i) bytes += event(rng, i);
    bytes.resize(size);
    if (n % 5 == 0)  // some incompressible bytes too
      for (auto& c : bytes) c = static_cast<char>(rng());
    ArrivedBody body;
    std::vector<Read> sent;
    std::int64_t offset = 0;
    for (std::size_t at = 0; at < bytes.size();) {
      std::size_t most = n % 3 == 0 ? 3 * ArrivedBody::kBlockBytes : 700;
      auto take = std::min<std::size_t>(bytes.size() - at, 1 + rng() % most);
      offset += static_cast<std::int64_t>(rng() % 2'000'000'000) - 1'000'000;
      sent.push_back({offset, bytes.substr(at, take)});
      body.append(sent.back().bytes, offset);
      at += take;
    }
    REQUIRE(body.size() == bytes.size());
    REQUIRE(body.reads() == sent.size());
    auto got = read_back(body);
    REQUIRE(got.size() == sent.size());
    for (std::size_t i = 0; i < sent.size(); ++i) {
      REQUIRE(got[i].offset_ns == sent[i].offset_ns);
      REQUIRE(got[i].bytes == sent[i].bytes);
    }
    REQUIRE(body.take_all() == bytes);
    CHECK(body.size() == 0);
    ++checked;
  }
  CHECK(checked == 2500);
}

TEST_CASE("a mark for every byte and an event split across a block boundary read back exactly") {
  std::mt19937_64 rng(7);
  std::string bytes;
  for (std::size_t i = 0; bytes.size() < ArrivedBody::kMostRawBytes + 2 * ArrivedBody::kBlockBytes + 100; ++i)
    bytes += event(rng, i);
  ArrivedBody body;
  for (std::size_t i = 0; i < bytes.size(); ++i) body.append(std::string_view(bytes).substr(i, 1), std::int64_t(i) * 3);
  auto got = read_back(body);
  REQUIRE(got.size() == bytes.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    REQUIRE(got[i].bytes.size() == 1);
    REQUIRE(got[i].bytes[0] == bytes[i]);
    REQUIRE(got[i].offset_ns == std::int64_t(i) * 3);
  }
  CHECK(body.compressed_blocks() == bytes.size() / ArrivedBody::kBlockBytes);
  // One read that straddles the first boundary comes back in two pieces and one read (the body
  // passes the raw bound: its blocks are compressed).
  ArrivedBody straddled;
  const auto cut = ArrivedBody::kBlockBytes - 10;
  straddled.append(std::string_view(bytes).substr(0, cut), 1);
  straddled.append(std::string_view(bytes).substr(cut, 400), 2);
  straddled.append(std::string_view(bytes).substr(cut + 400), 3);
  int pieces = 0;
  straddled.for_each_read([&](std::string_view, std::int64_t offset_ns, bool) {
    pieces += offset_ns == 2;
    return true;
  });
  CHECK(pieces == 2);
  auto reads = read_back(straddled);
  REQUIRE(reads.size() == 3);
  CHECK(reads[1].bytes == bytes.substr(cut, 400));
}

TEST_CASE("a stream of events held compressed takes a few tens of bytes an event and a small body stays raw") {
  std::mt19937_64 rng(3);
  ArrivedBody body;
  std::size_t raw = 0;
  const int events = 16'000;
  for (int i = 0; i < events; ++i) {
    auto e = event(rng, i);
    raw += e.size();
    body.append(e, std::int64_t(i) * 20'000);
  }
  CHECK(body.size() == raw);
  // ~100 raw bytes an event here; held, well under 64 bytes an event in all (marks included).
  CHECK(body.held_bytes() < 64 * std::size_t(events) / 2);
  CHECK(body.held_bytes() < raw / 4);
  // A small body is its bytes, never compressed: what it holds is about its size.
  ArrivedBody small;
  small.append(std::string(5000, 'x'), 1);
  CHECK(small.held_bytes() < 5000 + 64);
  CHECK(small.held_bytes() >= 5000);
}

TEST_CASE("append_within keeps what fits the limit and says the body passed it") {
  ArrivedBody body;
  CHECK(body.append_within(std::string(100, 'a'), 1, 150));
  CHECK_FALSE(body.append_within(std::string(100, 'b'), 2, 150));
  CHECK(body.size() == 150);
  CHECK_FALSE(body.append_within("c", 3, 150));
  CHECK(body.reads() == 2);
  CHECK(body.take_all() == std::string(100, 'a') + std::string(50, 'b'));
}

namespace {

// `body` appended event by event until it holds `size` bytes or more; returns the bytes.
std::string append_events(ArrivedBody& body, std::mt19937_64& rng, std::size_t size) {
  std::string bytes;
  for (std::size_t i = 0; bytes.size() < size; ++i) {
    auto e = event(rng, i);
    body.append(e, std::int64_t(i) * 1'000);
    bytes += e;
  }
  return bytes;
}

}  // namespace

TEST_CASE("a moderate stream is held raw and one past the raw bound is compressed") {
  REQUIRE(ArrivedBody::raw_budget_used() == 0);
  std::mt19937_64 rng(21);
  // 256 tokens with logprobs is ~95 KB: past a block, under the bound, so never compressed.
  ArrivedBody moderate;
  auto bytes = append_events(moderate, rng, 95'000);
  CHECK(moderate.compressed_blocks() == 0);
  CHECK(moderate.held_bytes() >= bytes.size());
  CHECK(ArrivedBody::raw_budget_used() > 0);
  CHECK(moderate.take_all() == bytes);
  CHECK(ArrivedBody::raw_budget_used() == 0);
  // Past the bound, every full block is compressed and the raw room given back.
  ArrivedBody longer;
  bytes = append_events(longer, rng, ArrivedBody::kMostRawBytes + 3 * ArrivedBody::kBlockBytes);
  CHECK(longer.compressed_blocks() == bytes.size() / ArrivedBody::kBlockBytes);
  CHECK(longer.held_bytes() < bytes.size() / 4);
  CHECK(ArrivedBody::raw_budget_used() == 0);
  CHECK(longer.take_all() == bytes);
}

TEST_CASE("bodies held raw stay within one budget in total and give it back when they go") {
  REQUIRE(ArrivedBody::raw_budget_used() == 0);
  std::mt19937_64 rng(5);
  // Each holds ~200 KB raw, ~136-192 KB of it past its first block: 120 of them pass the budget.
  const std::size_t each = 200'000;
  std::vector<ArrivedBody> bodies;  // grown without a reserve: bodies move as it does
  std::vector<std::string> sent;
  for (int n = 0; n < 120; ++n) {
    bodies.emplace_back();
    sent.push_back(append_events(bodies.back(), rng, each));
    CHECK(ArrivedBody::raw_budget_used() <= ArrivedBody::kRawBudgetBytes);
  }
  CHECK(bodies.front().compressed_blocks() == 0);
  CHECK(bodies.back().compressed_blocks() > 0);
  CHECK(ArrivedBody::raw_budget_used() > ArrivedBody::kRawBudgetBytes / 2);
  // A copy is counted as well, and given back with it.
  auto before = ArrivedBody::raw_budget_used();
  {
    ArrivedBody copy = bodies.front();
    CHECK(ArrivedBody::raw_budget_used() > before);
  }
  CHECK(ArrivedBody::raw_budget_used() == before);
  for (std::size_t n = 0; n < bodies.size(); ++n) REQUIRE(bodies[n].take_all() == sent[n]);
  CHECK(ArrivedBody::raw_budget_used() == 0);
  bodies.clear();
  // With the room given back, the next body is held raw again.
  ArrivedBody next;
  append_events(next, rng, each);
  CHECK(next.compressed_blocks() == 0);
}
