// A run planned from one pass over its input (replay/planner.hpp), and its feed reading each
// chain's requests from their records' positions, against what the loaded run's building blocks
// make of the same file; and the positions themselves (TraceReader::read_request_at).
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "replay/feed.hpp"
#include "tests/temp_dir.hpp"

using namespace retrace;
using namespace retrace::replay;
using namespace std::chrono_literals;
namespace asio = boost::asio;

namespace {

// Exchange i of session s<i % 5> (every 11th has none), sent at a recorded offset that grows with
// i but not evenly; its chat body grows with the turn, so bodies differ.
Exchange turn(std::uint64_t i) {
  Exchange exchange;
  exchange.id = i;
  exchange.session_id = i % 11 == 4 ? "" : "s" + std::to_string(i % 5);
  exchange.actual_send_ns = static_cast<std::int64_t>(i * 1'000'000'000 + (i % 3) * 400'000'000);
  exchange.request.method = "POST";
  exchange.request.target = "/v1/chat/completions";
  exchange.request.headers = {{"Content-Type", "application/json"}};
  exchange.request.body = R"({"model":"m)" + std::to_string(i % 2) + R"(","messages":[{"role":"user","content":")" +
                          std::string(100 + i * 37, 'a' + static_cast<char>(i % 26)) + R"("}]})";
  exchange.key = request_key("POST", exchange.request.target, exchange.request.body);
  if (i % 13 == 6) exchange.error = {ErrorKind::rejected, "413 from record"};
  return exchange;
}

// `count` turns, in frames of `per_frame` records, so that chains cross frames.
void write_turns(const std::filesystem::path& path, std::uint64_t count, std::size_t per_frame = 4) {
  TraceHeader header;
  header.created_unix_ns = 1'767'225'600'000'000'000;
  WriterOptions options;
  options.flush_every = per_frame;
  TraceWriter writer(path, header, options);
  for (std::uint64_t i = 0; i < count; ++i) writer.write(turn(i));
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

// What a loaded run makes of the same file and options: its chains, by input exchange id (a
// window's plan holds only the window's exchanges, so its indexes are not the input's).
struct LoadedPlan {
  std::vector<std::vector<std::size_t>> items;
  std::vector<std::vector<std::int64_t>> offsets;
  std::vector<std::int64_t> starts;
};
LoadedPlan loaded_plan(const std::filesystem::path& path, const Options& options) {
  auto loaded = load_requests(path);
  auto chosen = select_exchanges(loaded.exchanges, options, options.sessions || options.live_sessions);
  std::vector<Prepared> sends;
  std::vector<std::size_t> copies(loaded.exchanges.size());
  for (auto index : chosen) sends.push_back({index, copies[index]++, nullptr});
  LoadedPlan plan;
  for (const auto& chain : make_chains(loaded, sends, options)) {
    auto& items = plan.items.emplace_back();
    for (auto item : chain.items) items.push_back(loaded.exchanges[sends[item].input_index].id);
    plan.offsets.push_back(chain.offsets_ns);
    plan.starts.push_back(chain.start_ns);
  }
  return plan;
}

LoadedPlan planned(const Plan& plan) {
  LoadedPlan out;
  for (const auto& chain : plan.chains) {
    auto& items = out.items.emplace_back();
    for (auto item : chain.items) items.push_back(plan.candidates[plan.sends[item].input_index].id);
    out.offsets.push_back(chain.offsets_ns);
    out.starts.push_back(chain.start_ns);
  }
  return out;
}

std::vector<FedRequest> take_all(Feed& feed) {
  asio::io_context io;
  std::vector<FedRequest> taken;
  asio::co_spawn(io, [&]() -> asio::awaitable<void> {
    while (auto request = co_await feed.next()) taken.push_back(std::move(*request));
  }, asio::detached);
  io.run();
  return taken;
}

}  // namespace

TEST_CASE("a record read again at its position is the record read in order") {
  TempDir dir;
  write_turns(dir / "in.rtrace", 40, 3);
  TraceReader reader(dir / "in.rtrace");
  std::vector<Exchange> in_order;
  std::vector<RecordPosition> positions;
  Exchange exchange;
  while (reader.next_request(exchange)) {
    in_order.push_back(exchange);
    positions.push_back(reader.position());
  }
  REQUIRE(in_order.size() == 40);
  CHECK(positions[0].frame_offset != positions[39].frame_offset);
  TraceReader again(dir / "in.rtrace");
  for (std::size_t k = 0; k < positions.size(); ++k) {
    auto i = (k * 17) % positions.size();  // back and forth across frames
    INFO("record " << i);
    Exchange read;
    again.read_request_at(positions[i], read);
    CHECK(read == in_order[i]);
  }
}

TEST_CASE("a position in a trace that changed since is refused naming the change") {
  TempDir dir;
  write_turns(dir / "in.rtrace", 40, 3);
  std::vector<RecordPosition> positions;
  {
    TraceReader reader(dir / "in.rtrace");
    Exchange exchange;
    while (reader.next_request(exchange)) positions.push_back(reader.position());
  }
  write_turns(dir / "in.rtrace", 5, 64);  // one frame now, of 5 records
  TraceReader reader(dir / "in.rtrace");
  Exchange exchange;
  CHECK_THROWS_WITH(reader.read_request_at(positions.back(), exchange),
                    Catch::Contains("changed since it was planned"));
}

TEST_CASE("a planned run lays out the chains a loaded run lays out") {
  TempDir dir;
  write_turns(dir / "in.rtrace", 60);
  Setup setup;
  auto& options = setup.options;
  options.sessions = true;
  SECTION("closed loop") { options.schedule.concurrency = 3; }
  SECTION("sessions arriving at a rate") {
    options.schedule.kind = ScheduleKind::rate;
    options.schedule.rate = 5;
    options.requests = 90;
  }
  SECTION("recorded timing in a window with idle gaps capped") {
    options.schedule.kind = ScheduleKind::recorded;
    options.schedule.speed = 2;
    options.window_from = 5s;
    options.window_to = 40s;
    options.max_idle_gap = 300ms;
  }
  SECTION("a window of sessions arriving at a rate") {
    options.schedule.kind = ScheduleKind::rate;
    options.schedule.rate = 5;
    options.window_from = 2s;
    options.window_to = 30s;
  }
  SECTION("recorded timing of one shard of three in a window") {
    options.schedule.kind = ScheduleKind::recorded;
    options.shard_index = 2;
    options.shard_count = 3;
    options.window_from = 10s;
    options.window_to = 50s;
    options.max_idle_gap = 500ms;
  }
  SECTION("recorded timing of one shard of three") {
    options.schedule.kind = ScheduleKind::recorded;
    options.shard_index = 1;
    options.shard_count = 3;
    options.filters = {"session:s[0-3]"};
  }
  std::ostringstream warnings;
  auto input = scan_input((dir / "in.rtrace").string(), options, warnings, "test");
  CHECK(warnings.str().empty());
  REQUIRE(input.plan);
  auto want = loaded_plan(dir / "in.rtrace", options);
  REQUIRE(!want.items.empty());
  auto got = planned(*input.plan);
  CHECK(got.items == want.items);
  CHECK(got.offsets == want.offsets);
  CHECK(got.starts == want.starts);
  CHECK(input.count(options) == input.plan->sends.size());
  CHECK(input.exchanges == 60);
}

TEST_CASE("a planned feed hands over whole chains each turn read from its record and prepared") {
  TempDir dir;
  write_turns(dir / "in.rtrace", 60);
  Setup setup;
  setup.options.sessions = true;
  setup.options.schedule.kind = ScheduleKind::recorded;
  setup.options.set = {{"temperature", "0"}};
  std::ostringstream warnings;
  auto input = scan_input((dir / "in.rtrace").string(), setup.options, warnings, "test");
  REQUIRE(input.plan);
  auto loaded = load_requests(dir / "in.rtrace");
  Preparer prepare(setup.options, setup.checked);
  Feed feed(input, setup.options, prepare, input.plan->chains);
  auto fed = take_all(feed);
  CHECK(feed.finish() == nullptr);
  REQUIRE(fed.size() == input.plan->chains.size());
  std::size_t turns = 0;
  for (std::size_t c = 0; c < fed.size(); ++c) {
    const auto& chain = input.plan->chains[c];
    REQUIRE(fed[c].chain);
    CHECK(fed[c].start_ns == chain.start_ns);
    CHECK(fed[c].chain->offsets_ns == chain.offsets_ns);
    REQUIRE(fed[c].chain->turns.size() == chain.items.size());
    for (std::size_t k = 0; k < chain.items.size(); ++k, ++turns) {
      const auto& sent = fed[c].chain->turns[k];
      CHECK(sent.input_index == input.plan->sends[chain.items[k]].input_index);
      CHECK(sent.request->body == prepare(loaded.exchanges[sent.input_index])->body);
      CHECK(sent.request->source_id == loaded.exchanges[sent.input_index].id);
    }
  }
  CHECK(turns == input.plan->sends.size());
}

TEST_CASE("a planned run's warmup is its first sends one at a time cycling") {
  TempDir dir;
  write_turns(dir / "in.rtrace", 10);
  Setup setup;
  setup.options.sessions = true;
  std::ostringstream warnings;
  auto input = scan_input((dir / "in.rtrace").string(), setup.options, warnings, "test");
  REQUIRE(input.plan);
  auto warm = input.plan->warmup(25);
  REQUIRE(warm.size() == 25);
  for (std::size_t i = 0; i < warm.size(); ++i)
    CHECK(warm[i].items == std::vector<std::size_t>{i % input.plan->sends.size()});
}

TEST_CASE("a planned run refuses an unknown method only among the requests it sends") {
  TempDir dir;
  {
    TraceWriter writer(dir / "in.rtrace", TraceHeader{});
    for (std::uint64_t i = 0; i < 4; ++i) {
      auto exchange = turn(i);
      if (i == 2) exchange.request.method = "FROB";
      writer.write(exchange);
    }
    writer.close();
  }
  Setup setup;
  setup.options.sessions = true;
  std::ostringstream warnings;
  CHECK_THROWS_WITH(scan_input((dir / "in.rtrace").string(), setup.options, warnings, "test"),
                    Catch::Contains("unknown method 'FROB'"));
  setup.options.filters = {"session:s[013]"};
  auto input = scan_input((dir / "in.rtrace").string(), setup.options, warnings, "test");
  CHECK(input.plan->sends.size() == 3);
}

TEST_CASE("a window's plan holds the window's exchanges and its sessions not the rest of the trace") {
  TempDir dir;
  write_turns(dir / "in.rtrace", 400);
  Setup setup;
  auto& options = setup.options;
  options.schedule.kind = ScheduleKind::recorded;
  options.window_from = 100s;
  options.window_to = 110s;
  std::ostringstream warnings;
  auto input = scan_input((dir / "in.rtrace").string(), options, warnings, "test");
  REQUIRE(input.plan);
  CHECK(input.exchanges == 400);
  // Exchanges 0 to 10 start the five sessions (and 4 has none), all before 100 s: only the ones
  // without a session whose own offset is in the window are planned (each 11th from 4, at i s).
  std::vector<std::uint64_t> planned_ids;
  for (const auto& candidate : input.plan->candidates) planned_ids.push_back(candidate.id);
  CHECK(planned_ids == std::vector<std::uint64_t>{103});
  REQUIRE(input.plan->left_out);
  CHECK(input.plan->left_out->exchanges == 399);
  CHECK(planned(*input.plan).items == loaded_plan(dir / "in.rtrace", options).items);

  SECTION("a filter that matches only exchanges outside the window is not said to match none") {
    options.filters = {"session:s1"};
    auto filtered = scan_input((dir / "in.rtrace").string(), options, warnings, "test");
    CHECK(filtered.plan->candidates.size() == 1);  // 103, in the window, planned but not eligible
    CHECK(filtered.plan->sends.empty());
  }
  SECTION("a filter that matches no exchange of the trace is named with the trace's count") {
    options.filters = {"session:nobody"};
    CHECK_THROWS_WITH(scan_input((dir / "in.rtrace").string(), options, warnings, "test"),
                      Catch::Contains("matched none of the 400 exchanges"));
  }
}
