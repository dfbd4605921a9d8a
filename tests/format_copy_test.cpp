// Tests of copy_trace_with_header (format/trace_copy.cpp): a finished trace under a new header,
// its exchange frames copied byte for byte and its index moved to the new offsets.
#include <catch2/catch.hpp>
#include <fstream>
#include <iterator>
#include <string>

#include "format/trace.hpp"
#include "format/trace_copy.hpp"
#include "tests/temp_dir.hpp"

using namespace retrace;
namespace fs = std::filesystem;

namespace {

Exchange streamed_exchange(std::uint64_t id) {
  Exchange exchange;
  exchange.id = id;
  exchange.key = RequestKey{id * 0x9E3779B97F4A7C15ull, ~id};
  exchange.request.method = "POST";
  exchange.request.target = "/v1/completions";
  exchange.request.body = R"({"prompt":"tell a story )" + std::to_string(id) + R"(","stream":true})";
  exchange.response.status = 200;
  for (int e = 0; e < 20; ++e)
    exchange.response.events.push_back({e * 1000, "data: {\"t\":" + std::to_string(id * 100 + e) + "}\n\n"});
  return exchange;
}

TraceHeader header_with(const std::string& info) {
  TraceHeader header;
  header.tool_version = "test";
  header.server_info = info;
  return header;
}

std::string file_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void write_trace(const fs::path& path, std::uint64_t count, WriterOptions options) {
  TraceWriter writer(path, header_with("{\"before\":1}"), options);
  for (std::uint64_t id = 0; id < count; ++id) writer.write(streamed_exchange(id));
  writer.close();
}

}  // namespace

TEST_CASE("a trace copied under a longer header reads back the same exchanges with a valid index") {
  TempDir dir;
  write_trace(dir / "run.partial", 300, WriterOptions{.flush_every = 7, .zstd_level = 1});
  std::string longer;  // a /metrics page that does not compress away: the header frame grows
  std::uint64_t state = 1;
  for (int i = 0; i < 100000; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    longer += static_cast<char>('a' + (state >> 59));
  }
  REQUIRE(copy_trace_with_header(dir / "run.partial", dir / "run.rtrace", header_with(longer)));

  auto before = load_trace(dir / "run.partial");
  auto after = load_trace(dir / "run.rtrace");
  CHECK(after.header.server_info == longer);
  CHECK(after.recovery.clean());
  REQUIRE(after.exchanges.size() == 300);
  CHECK(after.exchanges == before.exchanges);

  // The exchange frames are the same bytes, after a different header frame.
  std::string from = file_bytes(dir / "run.partial"), to = file_bytes(dir / "run.rtrace");
  TraceReader old_reader(dir / "run.partial"), new_reader(dir / "run.rtrace");
  Exchange exchange;
  while (old_reader.next(exchange)) {}
  while (new_reader.next(exchange)) {}
  REQUIRE(old_reader.has_index());
  REQUIRE(new_reader.has_index());
  const auto& old_index = old_reader.index();
  const auto& new_index = new_reader.index();
  CHECK(new_index.keys == old_index.keys);
  REQUIRE(new_index.frames.size() == old_index.frames.size());
  REQUIRE(new_index.frames.size() == 1 + (300 + 6) / 7);
  std::int64_t shift = static_cast<std::int64_t>(new_index.frames[1].offset) -
                       static_cast<std::int64_t>(old_index.frames[1].offset);
  CHECK(shift > 50000);  // the header frame did grow, so every offset had to move
  for (std::size_t k = 1; k < new_index.frames.size(); ++k) {
    CHECK(new_index.frames[k].offset == old_index.frames[k].offset + shift);
    CHECK(new_index.frames[k].first_record == old_index.frames[k].first_record);
    CHECK(new_index.frames[k].records == old_index.frames[k].records);
    auto end_old = k + 1 < old_index.frames.size() ? old_index.frames[k + 1].offset : 0;
    if (end_old == 0) continue;
    auto size = end_old - old_index.frames[k].offset;
    CHECK(to.compare(new_index.frames[k].offset, size, from, old_index.frames[k].offset, size) == 0);
  }
}

TEST_CASE("a torn or index-less trace is not copied and no output is created") {
  TempDir dir;
  write_trace(dir / "plain.partial", 50, WriterOptions{.flush_every = 5, .write_index = false});
  CHECK_FALSE(copy_trace_with_header(dir / "plain.partial", dir / "plain.rtrace", header_with("x")));
  CHECK_FALSE(fs::exists(dir / "plain.rtrace"));

  write_trace(dir / "torn.partial", 50, WriterOptions{.flush_every = 5});
  auto bytes = file_bytes(dir / "torn.partial");
  fs::resize_file(dir / "torn.partial", bytes.size() / 2);  // a killed writer's file
  CHECK_FALSE(copy_trace_with_header(dir / "torn.partial", dir / "torn.rtrace", header_with("x")));
  CHECK_FALSE(fs::exists(dir / "torn.rtrace"));
}
