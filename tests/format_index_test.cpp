// Tests of format/'s trace index: spilled to disk while a trace is written (index_spill.hpp),
// streamed into the trailer at close, and left out rather than grow past what the reader accepts.
#include <catch2/catch.hpp>
#include <cstring>
#include <fstream>
#include <iterator>

#include "format/trace.hpp"
#include "tests/temp_dir.hpp"

using namespace retrace;
namespace fs = std::filesystem;

namespace {

Exchange tiny_exchange(std::uint64_t id) {
  Exchange exchange;
  exchange.id = id;
  exchange.key = RequestKey{id * 0x9E3779B97F4A7C15ull, ~id};
  exchange.request.method = "POST";
  exchange.request.target = "/v1/completions";
  exchange.response.status = 200;
  return exchange;
}

std::vector<std::string> directory_names(const fs::path& directory) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(directory)) names.push_back(entry.path().filename());
  return names;
}

}  // namespace

TEST_CASE("the index of thousands of frames and exchanges streams from its spill entry for entry") {
  TempDir dir;
  constexpr std::uint64_t kExchanges = 5000;  // several 64 KiB spill chunks of each list
  {
    TraceWriter writer(dir / "t.rtrace", TraceHeader{}, WriterOptions{.flush_every = 1});
    for (std::uint64_t id = 0; id < kExchanges; ++id) writer.write(tiny_exchange(id));
    writer.close();
    CHECK(writer.index_note().empty());
  }
  std::ifstream in(dir / "t.rtrace", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  TraceReader reader(dir / "t.rtrace");
  Exchange exchange;
  std::uint64_t read = 0;
  while (reader.next(exchange)) ++read;
  CHECK(read == kExchanges);
  CHECK(reader.recovery().clean());
  REQUIRE(reader.has_index());
  const TraceIndex& index = reader.index();
  REQUIRE(index.frames.size() == kExchanges + 1);  // the header's frame, then one per exchange
  for (std::uint64_t i = 0; i < index.frames.size(); ++i) {
    REQUIRE(index.frames[i].offset + 4 <= bytes.size());
    std::uint32_t magic;
    std::memcpy(&magic, bytes.data() + index.frames[i].offset, 4);
    CHECK(magic == 0xFD2FB528);
    CHECK(index.frames[i].first_record == i);
    CHECK(index.frames[i].records == 1);
  }
  REQUIRE(index.keys.size() == kExchanges);
  for (std::uint64_t i = 0; i < kExchanges; ++i) {
    CHECK(index.keys[i].exchange_id == i);
    CHECK(index.keys[i].key == tiny_exchange(i).key);
    CHECK(index.keys[i].frame == i + 1);
  }
}

TEST_CASE("an index that would pass what the reader accepts is left out and every exchange reads") {
  TempDir dir;
  constexpr std::uint64_t kLimit = 1u << 20;  // 32 bytes a key: 32,768 exchanges fill it
  constexpr std::uint64_t kExchanges = 40'000;
  std::string note;
  {
    TraceWriter writer(dir / "t.rtrace", TraceHeader{},
                       WriterOptions{.flush_every = 1000, .max_frame_bytes = kLimit});
    for (std::uint64_t id = 0; id < kExchanges; ++id) writer.write(tiny_exchange(id));
    writer.close();
    note = writer.index_note();
  }
  CHECK(note.find("no index written: it would pass the 1048576 bytes") != std::string::npos);
  TraceReader reader(dir / "t.rtrace", ReaderOptions{.traversal_limit_words = kLimit / 8});
  Exchange exchange;
  std::uint64_t read = 0;
  while (reader.next(exchange)) {
    CHECK(exchange.id == read);
    ++read;
  }
  CHECK(read == kExchanges);
  CHECK(reader.recovery().clean());
  CHECK_FALSE(reader.has_index());
}

TEST_CASE("the index spill leaves no file beside the trace while writing or after") {
  TempDir dir;
  {
    TraceWriter writer(dir / "t.rtrace", TraceHeader{}, WriterOptions{.flush_every = 1});
    for (std::uint64_t id = 0; id < 10'000; ++id) writer.write(tiny_exchange(id));
    CHECK(directory_names(dir.path) == std::vector<std::string>{"t.rtrace"});
    writer.close();
  }
  CHECK(directory_names(dir.path) == std::vector<std::string>{"t.rtrace"});
}
