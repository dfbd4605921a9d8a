// format/trace_writer.cpp's room for records (format/frame_input.hpp; issue 44): a record larger
// than the room left after the open frame's records is built again in a room it fits, so every
// record is one segment, the first long one too, built in one warm block instead of segments
// allocated (and their pages faulted in) anew; every record reads back the same. The file's records are read here as the stream framing lays them out
// (format/trace.capnp): u32 segments - 1, u32 words of each, padded to 8 bytes, the segments.
#include <catch2/catch.hpp>
#include <zstd.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "format/trace.hpp"
#include "tests/temp_dir.hpp"

using namespace retrace;

namespace {

// A streamed exchange of `events` events of 500 bytes (~0.5 MB for 1,000), distinct bytes.
Exchange long_exchange(std::uint64_t id, std::size_t events) {
  Exchange exchange;
  exchange.id = id;
  for (std::size_t e = 0; e < events; ++e) {
    std::string data = "data: {\"n\":" + std::to_string(id * 100000 + e) + ",\"pad\":\"";
    data.append(490 - data.size(), static_cast<char>('a' + (e + id) % 26));
    data += "\"}\n\n";
    exchange.response.events.push_back(static_cast<std::int64_t>(e) * 1000, data);
  }
  return exchange;
}

// The file decompressed (every zstd frame; skippable ones skipped).
std::string decompressed(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ZSTD_DStream* stream = ZSTD_createDStream();
  std::string out;
  std::vector<char> buffer(1 << 16);
  ZSTD_inBuffer input{file.data(), file.size(), 0};
  while (input.pos < input.size) {
    ZSTD_outBuffer output{buffer.data(), buffer.size(), 0};
    auto rc = ZSTD_decompressStream(stream, &output, &input);
    REQUIRE_FALSE(ZSTD_isError(rc));
    out.append(buffer.data(), output.pos);
  }
  ZSTD_freeDStream(stream);
  return out;
}

// The segment count of each record in `bytes`, in order.
std::vector<std::uint32_t> segment_counts(const std::string& bytes) {
  std::vector<std::uint32_t> counts;
  std::size_t at = 0;
  auto u32 = [&](std::size_t where) {
    std::uint32_t v;
    std::memcpy(&v, bytes.data() + where, 4);
    return v;
  };
  while (at + 8 <= bytes.size()) {
    const std::uint32_t segments = u32(at) + 1;
    std::uint64_t words = 0;
    for (std::uint32_t i = 0; i < segments; ++i) words += u32(at + 4 + 4 * i);
    at += ((segments + 2) & ~std::size_t{1}) * 4 + words * 8;
    counts.push_back(segments);
  }
  REQUIRE(at == bytes.size());
  return counts;
}

}  // namespace

TEST_CASE("records larger than the writer's room are each one segment the first one too") {
  TempDir dir;
  // ~0.5 MB records in the open frame, then ~5 MB ones: past the room a frame starts with (its
  // 4 MiB target and the largest record so far), the first of them after the open frame's records.
  const std::vector<std::size_t> events = {1000, 1000, 10000, 10000, 1000};
  {
    TraceWriter writer(dir / "run.rtrace", TraceHeader{}, WriterOptions{.zstd_level = 1, .write_index = false});
    for (std::uint64_t r = 0; r < events.size(); ++r) writer.write(long_exchange(r, events[r]));
    writer.close();
  }
  auto counts = segment_counts(decompressed(dir / "run.rtrace"));
  REQUIRE(counts.size() == events.size() + 1);  // the header, then the exchanges
  for (std::size_t r = 0; r < counts.size(); ++r) CHECK(counts[r] == 1);

  TraceReader reader(dir / "run.rtrace");
  Exchange exchange;
  std::uint64_t r = 0;
  for (; reader.next(exchange); ++r) {
    REQUIRE(r < events.size());
    const Exchange expected = long_exchange(r, events[r]);
    REQUIRE(exchange.response.events == expected.response.events);
  }
  CHECK(r == events.size());
}
