// Tests of load_requests (format/trace_reader.cpp): a trace loaded to be sent again keeps each
// exchange's request side and drops what its response recorded.
#include <catch2/catch.hpp>
#include <string>

#include "format/trace.hpp"
#include "tests/temp_dir.hpp"

using namespace retrace;

namespace {

Exchange recorded_exchange(std::uint64_t id) {
  Exchange exchange;
  exchange.id = id;
  exchange.source_id = id + 100;
  exchange.session_id = "s" + std::to_string(id % 2);
  exchange.start_unix_ns = 1'700'000'000'000'000'000 + static_cast<std::int64_t>(id);
  exchange.intended_send_ns = 10 * static_cast<std::int64_t>(id);
  exchange.actual_send_ns = 10 * static_cast<std::int64_t>(id) + 1;
  exchange.first_byte_ns = 500;
  exchange.end_ns = 900;
  exchange.request.method = "POST";
  exchange.request.target = "/v1/completions";
  exchange.request.headers = {{"content-type", "application/json"}};
  exchange.request.body = R"({"prompt":"story )" + std::to_string(id) + R"(","stream":true})";
  exchange.key = request_key(exchange.request.method, exchange.request.target, exchange.request.body);
  exchange.response.status = 200;
  exchange.response.headers = {{"content-type", "text/event-stream"}};
  exchange.response.streamed = true;
  for (int e = 0; e < 5; ++e) exchange.response.events.push_back({e * 10, "data: {\"t\":1}\n\n"});
  Choice choice;
  choice.tokens = {Token{-1, "once", false, 0, 10, {}}};
  choice.finish_reason = "length";
  exchange.choices = {choice};
  exchange.usage = {3, 1, 4};
  exchange.error = {ErrorKind::cut, "cut"};
  exchange.labels = {{"run", "a"}};
  if (id % 2) exchange.expected = "billing";
  exchange.dialect = "openai-completions";
  exchange.decode_note = "partial";
  exchange.retries = 1;
  return exchange;
}

}  // namespace

TEST_CASE("load_requests keeps each exchange's request side and error and drops its response") {
  TempDir dir;
  TraceHeader header;
  header.source = Source::recorded;
  {
    TraceWriter writer(dir / "t.rtrace", header, WriterOptions{.flush_every = 2});
    for (std::uint64_t id = 0; id < 5; ++id) writer.write(recorded_exchange(id));
    writer.close();
  }
  LoadedTrace whole = load_trace(dir / "t.rtrace");
  LoadedTrace requests = load_requests(dir / "t.rtrace");
  CHECK(requests.header == whole.header);
  CHECK(requests.recovery.clean());
  REQUIRE(requests.exchanges.size() == 5);
  for (std::uint64_t id = 0; id < 5; ++id) {
    Exchange expected = recorded_exchange(id);
    expected.response = {};
    expected.choices.clear();
    expected.usage = {};
    CHECK(requests.exchanges[id] == expected);
    CHECK(whole.exchanges[id] == recorded_exchange(id));
  }
}

TEST_CASE("load_requests reports a torn tail as load_trace does") {
  TempDir dir;
  {
    TraceWriter writer(dir / "t.rtrace", TraceHeader{}, WriterOptions{.flush_every = 1});
    for (std::uint64_t id = 0; id < 3; ++id) writer.write(recorded_exchange(id));
    writer.close();
  }
  auto size = std::filesystem::file_size(dir / "t.rtrace");
  std::filesystem::resize_file(dir / "t.rtrace", size - 40);
  LoadedTrace whole = load_trace(dir / "t.rtrace");
  LoadedTrace requests = load_requests(dir / "t.rtrace");
  CHECK(requests.exchanges.size() == whole.exchanges.size());
  CHECK(requests.recovery.torn == whole.recovery.torn);
  CHECK(requests.recovery.dropped_bytes == whole.recovery.dropped_bytes);
}

TEST_CASE("load_requests with a stop reads as far as it asks, keeping the exchange it stopped at") {
  TempDir dir;
  {
    TraceWriter writer(dir / "t.rtrace", TraceHeader{}, WriterOptions{.flush_every = 2});
    for (std::uint64_t id = 0; id < 9; ++id) writer.write(recorded_exchange(id));
    writer.close();
  }
  std::vector<std::uint64_t> seen;
  LoadedTrace first = load_requests(dir / "t.rtrace", {}, [&](const Exchange& exchange) {
    seen.push_back(exchange.id);
    return exchange.id == 3;
  });
  CHECK(seen == std::vector<std::uint64_t>{0, 1, 2, 3});
  REQUIRE(first.exchanges.size() == 4);
  LoadedTrace whole = load_requests(dir / "t.rtrace");
  for (std::size_t i = 0; i < 4; ++i) CHECK(first.exchanges[i] == whole.exchanges[i]);
  CHECK(first.recovery.clean());
  // A stop that never says so reads it all.
  CHECK(load_requests(dir / "t.rtrace", {}, [](const Exchange&) { return false; }).exchanges.size() == 9);
}

TEST_CASE("next_request into an exchange that held a whole one leaves its response side empty") {
  TempDir dir;
  {
    TraceWriter writer(dir / "t.rtrace", TraceHeader{});
    for (std::uint64_t id = 0; id < 2; ++id) writer.write(recorded_exchange(id));
    writer.close();
  }
  TraceReader reader(dir / "t.rtrace");
  Exchange exchange;
  REQUIRE(reader.next(exchange));
  REQUIRE(exchange == recorded_exchange(0));
  REQUIRE(reader.next_request(exchange));  // the same storage, reused as a replay reader does
  Exchange expected = recorded_exchange(1);
  expected.response = {};
  expected.choices.clear();
  expected.usage = {};
  CHECK(exchange == expected);
}
