// A replay that reads its input as it sends it (replay/feed.hpp): what the scan learns, and what a
// Feed hands the workers, against what the loaded run's building blocks make of the same file.
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "replay/feed.hpp"
#include "replay/shard.hpp"
#include "tests/temp_dir.hpp"

using namespace retrace;
using namespace retrace::replay;
namespace asio = boost::asio;

namespace {

// Exchange i: a completion of model m<i % 3>, labelled with its parity; every 7th (i % 7 == 3) was
// rejected by record.
Exchange input_exchange(std::uint64_t i) {
  Exchange exchange;
  exchange.id = i;
  exchange.request.method = "POST";
  exchange.request.target = "/v1/completions";
  exchange.request.headers = {{"Content-Type", "application/json"}};
  exchange.request.body =
      R"({"model":"m)" + std::to_string(i % 3) + R"(","prompt":"question )" + std::to_string(i) + R"("})";
  exchange.key = request_key("POST", exchange.request.target, exchange.request.body);
  exchange.labels = {{"parity", i % 2 ? "odd" : "even"}};
  if (i % 5 == 0) exchange.expected = "answer " + std::to_string(i);
  if (i % 7 == 3) exchange.error = {ErrorKind::rejected, "413 from record"};
  return exchange;
}

void write_input(const std::filesystem::path& path, std::uint64_t count) {
  TraceHeader header;
  header.created_unix_ns = 1'767'225'600'000'000'000;
  TraceWriter writer(path, header);
  for (std::uint64_t i = 0; i < count; ++i) writer.write(input_exchange(i));
  writer.close();
}

struct Setup {
  Options options;
  Preflight checked;
  Setup() {
    options.target = "http://127.0.0.1:9";
    checked.url = net::parse_url(options.target);
  }
};

// A closed-loop run's feed of a whole input file, with default options.
struct FeedOf {
  Setup setup;
  std::ostringstream warnings;
  StreamedInput input;
  Preparer prepare;
  Feed feed;
  explicit FeedOf(const std::filesystem::path& path)
      : input(scan_input(path.string(), setup.options, warnings, "test")),
        prepare(setup.options, setup.checked),
        feed(input, setup.options, prepare, input.count(setup.options), false) {}
};

// Takes up to `most` requests from `feed` on an io_context of this thread (all of them: SIZE_MAX).
std::vector<FedRequest> take(Feed& feed, std::size_t most = SIZE_MAX) {
  asio::io_context io;
  std::vector<FedRequest> taken;
  asio::co_spawn(io, [&]() -> asio::awaitable<void> {
    while (taken.size() < most) {
      auto request = co_await feed.next();
      if (!request) break;
      taken.push_back(std::move(*request));
    }
  }, asio::detached);
  io.run();
  return taken;
}

// Waits for the reading thread to have `count` requests ready (it fills them by itself).
void wait_ready(const Feed& feed, std::size_t count) {
  auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (feed.ready() < count && std::chrono::steady_clock::now() < give_up) std::this_thread::yield();
  REQUIRE(feed.ready() == count);
}

}  // namespace

TEST_CASE("a streamed input hands over what a loaded run sends, in input order, prepared once each") {
  TempDir dir;
  write_input(dir / "in.rtrace", 300);
  Setup setup;
  setup.options.filters = {"label:parity=odd"};
  setup.options.limit = 100;
  setup.options.set = {{"temperature", "0"}};
  std::ostringstream warnings;
  auto input = scan_input((dir / "in.rtrace").string(), setup.options, warnings, "test");
  CHECK(warnings.str().empty());

  auto loaded = load_requests(dir / "in.rtrace");
  auto chosen = select_exchanges(loaded.exchanges, setup.options, false);
  auto sends = prepare_requests(loaded, chosen, setup.options, setup.checked);
  REQUIRE(sends.size() == 100);
  CHECK(input.selected == 100);
  CHECK(input.count(setup.options) == 100);

  Preparer prepare(setup.options, setup.checked);
  Feed feed(input, setup.options, prepare, input.count(setup.options), false);
  auto fed = take(feed);
  CHECK(feed.finish() == nullptr);
  REQUIRE(fed.size() == sends.size());
  for (std::size_t i = 0; i < fed.size(); ++i) {
    INFO("send " << i);
    const auto& got = *fed[i].send.request;
    const auto& want = *sends[i].request;
    CHECK(fed[i].send.input_index == sends[i].input_index);
    CHECK(fed[i].send.cycle == 0);
    CHECK(fed[i].start_ns == 0);
    CHECK(got.body == want.body);
    CHECK(got.head == want.head);
    CHECK(got.key == want.key);
    REQUIRE(got.recorded_headers);
    REQUIRE(want.recorded_headers);
    CHECK(*got.recorded_headers == *want.recorded_headers);
    CHECK(got.source_id == want.source_id);
    CHECK(got.labels == want.labels);
    CHECK(got.expected == want.expected);
  }
  // No rejected request, and the filter held.
  for (const auto& request : fed) CHECK(request.send.request->source_id % 7 != 3);
  for (const auto& request : fed) CHECK(request.send.request->source_id % 2 == 1);
}

TEST_CASE("replay --requests cycles a streamed input: a small selection is kept, a large one read again") {
  TempDir dir;
  // 10 exchanges (kept) and kCycleKept + 100 (read again each cycle).
  for (std::uint64_t size : {std::uint64_t{10}, std::uint64_t{kCycleKept + 100}}) {
    INFO("input of " << size);
    auto path = dir / ("in" + std::to_string(size) + ".rtrace");
    write_input(path, size);
    Setup setup;
    std::ostringstream warnings;
    auto probe = scan_input(path.string(), setup.options, warnings, "test");
    setup.options.requests = probe.selected * 2 + 3;
    auto input = scan_input(path.string(), setup.options, warnings, "test");
    Preparer prepare(setup.options, setup.checked);
    Feed feed(input, setup.options, prepare, input.count(setup.options), false);
    auto fed = take(feed);
    CHECK(feed.finish() == nullptr);
    REQUIRE(fed.size() == *setup.options.requests);
    for (std::size_t i = 0; i < fed.size(); ++i) {
      auto first = i % input.selected;
      if (fed[i].send.cycle != i / input.selected || fed[i].send.input_index != fed[first].send.input_index ||
          fed[i].send.request->body != fed[first].send.request->body) {
        FAIL_CHECK("send " << i << ": cycle " << fed[i].send.cycle << ", input " << fed[i].send.input_index);
        break;
      }
    }
    // A kept cycle sends the same prepared request again; a read one prepares it again.
    bool shared = fed[input.selected].send.request == fed[0].send.request;
    CHECK(shared == (input.selected <= kCycleKept));
  }
}

TEST_CASE("a streamed shard's open-loop starts are the whole run's arrivals I, I + N, ...") {
  TempDir dir;
  write_input(dir / "in.rtrace", 200);
  Setup setup;
  setup.options.schedule.kind = ScheduleKind::rate;
  setup.options.schedule.rate = 50;
  setup.options.seed = 7;
  setup.options.shard_index = 1;
  setup.options.shard_count = 3;
  std::ostringstream warnings;
  auto input = scan_input((dir / "in.rtrace").string(), setup.options, warnings, "test");
  Preparer prepare(setup.options, setup.checked);
  Feed feed(input, setup.options, prepare, input.count(setup.options), true);
  auto fed = take(feed);
  REQUIRE(fed.size() == input.selected);
  auto whole = arrival_offsets_ns(1 + 3 * fed.size(), setup.options.schedule, setup.options.seed);
  for (std::size_t c = 0; c < fed.size(); ++c) {
    INFO("chain " << c);
    CHECK(fed[c].start_ns == whole[1 + 3 * c]);
  }
  // The shard's requests are every third of the unrejected ones, from the second.
  auto loaded = load_requests(dir / "in.rtrace");
  auto chosen = select_exchanges(loaded.exchanges, setup.options, false);
  REQUIRE(chosen.size() == fed.size());
  for (std::size_t c = 0; c < fed.size(); ++c) CHECK(fed[c].send.input_index == chosen[c]);
}

TEST_CASE("a feed's reader stops at kFeedAhead ready and is woken once half are taken") {
  TempDir dir;
  write_input(dir / "in.rtrace", 2000);
  FeedOf run(dir / "in.rtrace");
  auto& feed = run.feed;
  wait_ready(feed, kFeedAhead);  // and no more: the reader waits for room
  // Down to one above half: the reader is not woken, so exactly these are ready.
  auto first = take(feed, kFeedAhead / 2 - 1);
  CHECK(feed.ready() == kFeedAhead / 2 + 1);
  // At half it is, and fills up to kFeedAhead again.
  auto second = take(feed, 1);
  wait_ready(feed, kFeedAhead);
  auto rest = take(feed);
  CHECK(feed.finish() == nullptr);
  CHECK(first.size() + second.size() + rest.size() == run.input.selected);
  CHECK(rest.back().send.input_index == 1999);
}

TEST_CASE("stop ends a feed whose reader waits for room, and every taker after it") {
  TempDir dir;
  write_input(dir / "in.rtrace", 1000);
  FeedOf run(dir / "in.rtrace");
  auto& feed = run.feed;
  wait_ready(feed, kFeedAhead);
  feed.stop();
  CHECK(take(feed).empty());
  CHECK(feed.finish() == nullptr);  // stopped is not a failure
}

TEST_CASE("an input that changed since the scan ends the feed with an error that says so") {
  TempDir dir;
  write_input(dir / "in.rtrace", 100);
  Setup setup;
  std::ostringstream warnings;
  auto input = scan_input((dir / "in.rtrace").string(), setup.options, warnings, "test");
  write_input(dir / "in.rtrace", 40);  // replaced between the scan and the run
  Preparer prepare(setup.options, setup.checked);
  Feed feed(input, setup.options, prepare, input.count(setup.options), false);
  auto fed = take(feed);
  CHECK(fed.size() == 40 - 6);  // every request it still holds is handed over (6 were rejected)
  auto failure = feed.finish();
  REQUIRE(failure != nullptr);
  try {
    std::rethrow_exception(failure);
  } catch (const TraceError& e) {
    CHECK_THAT(e.what(), Catch::Contains("changed while it was replayed") && Catch::Contains("34 of 86"));
  }
}

TEST_CASE("a streamed input's scan learns what a loaded one's preflight and header read") {
  TempDir dir;
  write_input(dir / "in.rtrace", 50);
  Setup setup;
  setup.options.shard_count = 2;  // a sharded run reads the whole trace for its identity
  setup.options.limit = 3;
  std::ostringstream warnings;
  auto input = scan_input((dir / "in.rtrace").string(), setup.options, warnings, "test");
  auto loaded = load_requests(dir / "in.rtrace");
  CHECK(input.exchanges == 50);
  CHECK(input.facts.rejected == rejected_by_record(loaded.exchanges));
  CHECK(input.selected == 3);  // ids 0, 2 and 5: every other unrejected one
  CHECK(input.facts.models == std::set<std::string>{"m0", "m2"});
  CHECK(input.identity == input_identity(loaded));
  CHECK(input.header == loaded.header);

  // Without a shard, --limit 3 reads only as far as its third chosen request.
  setup.options.shard_count = 1;
  auto limited = scan_input((dir / "in.rtrace").string(), setup.options, warnings, "test");
  CHECK(limited.exchanges == 3);
  CHECK(limited.facts.models == std::set<std::string>{"m0", "m1", "m2"});
}

TEST_CASE("a streamed input names a torn tail as a loaded one does, and refuses an empty one") {
  TempDir dir;
  write_input(dir / "in.rtrace", 300);
  auto size = std::filesystem::file_size(dir / "in.rtrace");
  std::filesystem::resize_file(dir / "in.rtrace", size * 9 / 10);
  Setup setup;
  std::ostringstream streamed, loaded;
  auto input = scan_input((dir / "in.rtrace").string(), setup.options, streamed, "retrace");
  auto whole = load_input((dir / "in.rtrace").string(), setup.options, loaded, "retrace");
  CHECK(streamed.str() == loaded.str());
  CHECK_THAT(streamed.str(), Catch::Contains("retrace: warning: ") && Catch::Contains("readable exchanges"));
  CHECK(input.exchanges == whole.exchanges.size());

  write_input(dir / "empty.rtrace", 0);
  CHECK_THROWS_WITH(scan_input((dir / "empty.rtrace").string(), setup.options, streamed, "retrace"),
                    Catch::Contains("holds no exchanges to replay"));
}
