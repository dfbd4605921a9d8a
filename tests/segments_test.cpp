// Segment sets (format/segments.hpp): a directory of numbered traces read as one trace, and
// record's output that writes them (record/trace_output.hpp): rotation, retention, a clock
// that jumps.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "format/header.hpp"
#include "format/segments.hpp"
#include "record/trace_output.hpp"
#include "tests/temp_dir.hpp"

using namespace retrace;
using namespace retrace::record;
namespace fs = std::filesystem;

namespace {

Exchange exchange_numbered(std::uint64_t id, std::size_t body_bytes = 64) {
  Exchange exchange;
  exchange.id = id;
  exchange.request.method = "POST";
  exchange.request.target = "/v1/completions";
  exchange.request.body = "{\"prompt\":\"" + std::to_string(id) + std::string(body_bytes, 'p') + "\"}";
  exchange.key = request_key("POST", exchange.request.target, exchange.request.body);
  exchange.response.status = 200;
  exchange.start_unix_ns = 1'700'000'000'000'000'000 + static_cast<std::int64_t>(id) * 1000;
  exchange.end_ns = 10;
  return exchange;
}

TraceHeader test_header() {
  return new_trace_header(Source::recorded, "test", "http://upstream", "{}", Clock::system());
}

// Writes segments first..last of `per_segment` exchanges each, ids continuing, into `dir`.
void write_segments(const fs::path& dir, std::uint64_t first, std::uint64_t last,
                    std::uint64_t per_segment, bool index = true) {
  fs::create_directories(dir);
  WriterOptions options;
  options.write_index = index;
  for (std::uint64_t number = first; number <= last; ++number) {
    TraceWriter writer(dir / segment_file_name(number), test_header(), options);
    for (std::uint64_t i = 0; i < per_segment; ++i)
      writer.write(exchange_numbered((number - 1) * per_segment + i));
    writer.close();
  }
}

std::vector<std::uint64_t> ids_read(const fs::path& path, Recovery* recovery = nullptr) {
  TraceReader reader(path);
  std::vector<std::uint64_t> ids;
  Exchange exchange;
  while (reader.next(exchange)) ids.push_back(exchange.id);
  if (recovery) *recovery = reader.recovery();
  return ids;
}

}  // namespace

TEST_CASE("segment names are six digits or more and only those name a segment", "[segments]") {
  CHECK(segment_file_name(1) == "000001.rtrace");
  CHECK(segment_file_name(1234567) == "1234567.rtrace");
  CHECK(segment_number("000042.rtrace") == 42u);
  CHECK(segment_number("1234567.rtrace") == 1234567u);
  CHECK_FALSE(segment_number("0000042.rtrace"));
  CHECK_FALSE(segment_number("000000.rtrace"));
  CHECK_FALSE(segment_number("42.rtrace"));
  CHECK_FALSE(segment_number("000042.rtrace.partial"));
  CHECK_FALSE(segment_number("notes.txt"));
}

TEST_CASE("thousands of small segments read as one trace in number order with memory flat",
          "[segments]") {
  TempDir dir;
  // Without their index (a temporary file each while written): quicker to make, read the same.
  write_segments(dir / "few", 1, 10, 2, false);
  write_segments(dir / "many", 1, 2000, 2, false);
  std::uint64_t few_peak = 0;
  {
    TraceReader reader(dir / "few");
    Exchange exchange;
    while (reader.next(exchange)) {}
    few_peak = reader.peak_buffer_bytes();
  }
  TraceReader reader(dir / "many");
  Exchange exchange;
  std::uint64_t expected = 0;
  bool in_order = true;
  while (reader.next(exchange)) in_order = in_order && exchange.id == expected++;
  CHECK(in_order);
  CHECK(expected == 4000);
  CHECK(reader.recovery().clean());
  // One segment open at a time: the buffers of 2,000 segments are those of 10.
  CHECK(reader.peak_buffer_bytes() == few_peak);
  CHECK(reader.header().created_unix_ns > 0);
  CHECK(reader.file_size() > 2000 * 40);
}

TEST_CASE("a segment deleted from the middle is named as a gap and the rest is read", "[segments]") {
  TempDir dir;
  write_segments(dir / "set", 1, 6, 3);
  fs::remove(dir / "set" / segment_file_name(3));
  fs::remove(dir / "set" / segment_file_name(4));
  Recovery recovery;
  auto ids = ids_read(dir / "set", &recovery);
  CHECK(ids == std::vector<std::uint64_t>{0, 1, 2, 3, 4, 5, 12, 13, 14, 15, 16, 17});
  CHECK(recovery.missing_segments == 2);
  CHECK(recovery.first_missing_segment == 3);
  CHECK_FALSE(recovery.clean());
  CHECK(describe(recovery).find("000003.rtrace") != std::string::npos);
}

TEST_CASE("segments retention deleted before the first present one are not a gap", "[segments]") {
  TempDir dir;
  write_segments(dir / "set", 1, 4, 2);
  fs::remove(dir / "set" / segment_file_name(1));
  Recovery recovery;
  auto ids = ids_read(dir / "set", &recovery);
  CHECK(ids.size() == 6);
  CHECK(recovery.clean());
}

TEST_CASE("a torn middle segment is named and the segments after it are read", "[segments]") {
  TempDir dir;
  write_segments(dir / "set", 1, 3, 4);
  auto middle = dir / "set" / segment_file_name(2);
  auto size = fs::file_size(middle);
  fs::resize_file(middle, size / 2);
  Recovery recovery;
  auto ids = ids_read(dir / "set", &recovery);
  CHECK(ids.front() == 0);
  CHECK(ids.back() == 11);  // the third segment whole
  CHECK(recovery.skipped_regions >= 1);
  CHECK(recovery.skipped_reason.find("000002.rtrace") != std::string::npos);
  CHECK_FALSE(recovery.torn);
}

TEST_CASE("the last segment still being written reads like a torn tail", "[segments]") {
  TempDir dir;
  write_segments(dir / "set", 1, 2, 4);
  WriterOptions options;
  options.flush_every = 1;
  TraceWriter open(dir / "set" / segment_file_name(3), test_header(), options);
  open.write(exchange_numbered(8));
  open.write(exchange_numbered(9));
  // Not closed: no index yet, as while record runs.
  Recovery recovery;
  auto ids = ids_read(dir / "set", &recovery);
  CHECK(ids.size() == 10);
  CHECK(ids.back() == 9);
}

TEST_CASE("a record position names its segment and reading it again crosses segments", "[segments]") {
  TempDir dir;
  write_segments(dir / "set", 1, 3, 2);
  TraceReader reader(dir / "set");
  std::vector<RecordPosition> positions;
  Exchange exchange;
  while (reader.next_request(exchange)) positions.push_back(reader.position());
  REQUIRE(positions.size() == 6);
  CHECK(positions[0].segment == 1);
  CHECK(positions[5].segment == 3);
  reader.read_request_at(positions[1], exchange);
  CHECK(exchange.id == 1);
  reader.read_request_at(positions[4], exchange);
  CHECK(exchange.id == 4);
  reader.read_request_at(positions[0], exchange);
  CHECK(exchange.id == 0);
}

TEST_CASE("a directory without segments is refused naming what to give", "[segments]") {
  TempDir dir;
  fs::create_directories(dir / "empty");
  std::ofstream(dir / "empty" / "notes.txt") << "hello";
  try {
    TraceReader reader(dir / "empty");
    FAIL("an empty directory was read as a trace");
  } catch (const TraceError& e) {
    CHECK(std::string(e.what()).find("holds no segments") != std::string::npos);
  }
}

namespace {

struct Output {
  TempDir dir;
  ManualClock clock{std::chrono::nanoseconds{0}, Clock::wall_time_point{std::chrono::hours(24 * 365 * 50)}};
  std::vector<std::string> notes;
  std::unique_ptr<TraceOutput> output;
  void open(SegmentOptions options) {
    options.segmented = true;
    output = std::make_unique<TraceOutput>(dir / "set", test_header(), WriterOptions{}, options, clock,
                                           [this](const std::string& line) { notes.push_back(line); });
  }
  std::vector<std::uint64_t> present() { return list_segments(dir / "set").numbers; }
};

}  // namespace

TEST_CASE("time rotation closes a segment once per window even when the clock jumps hours ahead",
          "[segments][clock]") {
  Output out;
  out.open({.rotate_every = std::chrono::seconds(10)});
  out.output->write(exchange_numbered(0));
  out.clock.advance(std::chrono::seconds(5));
  out.output->tick();
  CHECK(out.present().size() == 1);
  out.clock.advance(std::chrono::hours(9));  // a jump: one rotation, not thousands
  out.output->tick();
  out.output->tick();
  CHECK(out.present() == std::vector<std::uint64_t>{1, 2});
  // The new segment is empty: its window restarts rather than rotating empty segments.
  out.clock.advance(std::chrono::seconds(11));
  out.output->tick();
  CHECK(out.present().size() == 2);
  out.output->write(exchange_numbered(1));
  out.clock.advance(std::chrono::seconds(11));
  out.output->write(exchange_numbered(2));  // rotates first: a segment never splits an exchange
  out.output->close();
  CHECK(out.present() == std::vector<std::uint64_t>{1, 2, 3});
  CHECK(ids_read(out.dir / "set") == std::vector<std::uint64_t>{0, 1, 2});
  CHECK(out.output->counters.segments_opened == 3);
}

TEST_CASE("keep-for deletes the oldest closed segments on the monotonic clock never the open one",
          "[segments][clock]") {
  Output out;
  out.open({.keep_for = std::chrono::minutes(1)});
  for (std::uint64_t i = 0; i < 3; ++i) {
    out.output->write(exchange_numbered(i));
    out.output->request_rotation();
    out.output->tick();
  }
  CHECK(out.present() == std::vector<std::uint64_t>{1, 2, 3, 4});
  out.clock.advance(std::chrono::seconds(59));
  out.output->tick();
  CHECK(out.present().size() == 4);
  out.clock.advance(std::chrono::hours(100));  // a jump ages every closed segment once
  out.output->tick();
  CHECK(out.present() == std::vector<std::uint64_t>{4});
  CHECK(out.output->counters.segments_deleted == 3);
  CHECK(out.output->counters.bytes_deleted > 0);
  std::size_t deletions = 0;
  for (const auto& note : out.notes) deletions += note.rfind("deleted segment", 0) == 0;
  CHECK(deletions == 3);
}

TEST_CASE("max-disk deletes the oldest closed segments until the set fits", "[segments]") {
  Output out;
  out.open({.rotate_size = 1u << 20, .max_disk = 3u << 20});
  // Bodies that compress little (random letters, about 190 KB each on disk), none like another,
  // so a segment closes every five or so.
  std::uint64_t state = 7;
  for (std::uint64_t i = 0; i < 40; ++i) {
    auto exchange = exchange_numbered(i);
    exchange.request.body.clear();
    for (int j = 0; j < 300'000; ++j) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      exchange.request.body.push_back(static_cast<char>('a' + (state >> 59)));
    }
    out.output->write(exchange);
    std::uint64_t total = 0;
    for (auto number : out.present()) total += fs::file_size(out.dir / "set" / segment_file_name(number));
    // Closed files and the open one's flushed bytes: never past the budget by more than the
    // open segment's frame in the making.
    CHECK(total <= (3u << 20) + 400'000);
  }
  out.output->close();
  auto present = out.present();
  INFO("segments left " << present.size() << ", notes " << out.notes.size());
  CHECK(present.front() > 1);
  CHECK(out.output->counters.segments_deleted == present.front() - 1);
  for (auto number : present)
    CHECK(fs::file_size(out.dir / "set" / segment_file_name(number)) <= (1u << 20) + 400'000);
}

TEST_CASE("a directory holding files that are not segments is refused", "[segments]") {
  TempDir dir;
  fs::create_directories(dir / "set");
  std::ofstream(dir / "set" / "notes.txt") << "mine";
  ManualClock clock;
  try {
    TraceOutput output(dir / "set", test_header(), WriterOptions{}, {.segmented = true}, clock,
                       [](const std::string&) {});
    FAIL("a foreign directory was taken");
  } catch (const TraceError& e) {
    CHECK(std::string(e.what()).find("holds 1 entry that is not a segment (e.g. 'notes.txt')") !=
          std::string::npos);
  }
  CHECK(fs::exists(dir / "set" / "notes.txt"));
}

TEST_CASE("a set found is continued after its last segment with its set id", "[segments]") {
  Output out;
  out.open({});
  out.output->write(exchange_numbered(0));
  out.output->close();
  out.open({});
  out.output->write(exchange_numbered(1));
  out.output->close();
  CHECK(out.present() == std::vector<std::uint64_t>{1, 2});
  TraceReader first(out.dir / "set" / segment_file_name(1));
  TraceReader second(out.dir / "set" / segment_file_name(2));
  CHECK_FALSE(second.header().labels.back().value.empty());
  CHECK(first.header().labels.back() == second.header().labels.back());
  CHECK(second.header().labels.front().value == "2");
}
