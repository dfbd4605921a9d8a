// record's trace thread (record/trace_sink.hpp): the queue from the proxy workers is bounded.
#include <catch2/catch.hpp>

#include <atomic>
#include <filesystem>
#include <thread>

#include "format/header.hpp"
#include "record/trace_sink.hpp"
#include "tests/temp_dir.hpp"

using namespace retrace;
using namespace retrace::record;

namespace {

CapturedExchange captured_with_body(const std::string& target, std::size_t body_bytes) {
  CapturedExchange captured;
  captured.exchange.request.method = "GET";
  captured.exchange.request.target = target;
  captured.exchange.response.status = 200;
  captured.body.append(std::string(body_bytes, 'x'), 0);
  return captured;
}

// A sink's trace in a scratch directory (TempDir), and the header it writes.
struct SinkFile {
  TempDir dir;
  std::filesystem::path path = dir / "sink.rtrace";
  TraceHeader header = new_trace_header(Source::recorded, "test", "http://upstream", "{}", Clock::system());
};

}  // namespace

TEST_CASE("a worker waits for room when the trace thread's queue is full, and nothing is dropped",
          "[record][sink]") {
  SinkFile file;
  WriterOptions writer;
  writer.flush_every = 1;
  // A bound of 1,000 bytes: the first exchange (an empty queue takes any) fills it.
  TraceSink sink(file.path, file.header, writer, Redactor(false, {}), 1000);

  // The trace thread is not started yet, so nothing leaves the queue.
  sink.submit(captured_with_body("/first", 4000));
  REQUIRE(sink.queue_full_waits == 0);

  std::atomic<bool> second_submitted{false};
  std::thread worker([&] {
    sink.submit(captured_with_body("/second", 10));
    second_submitted = true;
  });
  // The second submit must wait for room; an unbounded queue would take it at once.
  while (sink.queue_full_waits == 0 && !second_submitted) std::this_thread::yield();
  CHECK(sink.queue_full_waits == 1);
  CHECK_FALSE(second_submitted);

  sink.start({});  // the trace thread takes the queue: the worker gets room
  worker.join();
  CHECK(second_submitted);
  sink.close();

  CHECK(sink.written == 2);
  CHECK(sink.lost == 0);
  auto trace = load_trace(file.path);
  REQUIRE(trace.exchanges.size() == 2);
  CHECK(trace.exchanges[0].request.target == "/first");
  CHECK(trace.exchanges[0].response.body.size() == 4000);
  CHECK(trace.exchanges[1].request.target == "/second");
}

TEST_CASE("an exchange larger than the queue's bound goes through when the queue is empty",
          "[record][sink]") {
  SinkFile file;
  TraceSink sink(file.path, file.header, WriterOptions{}, Redactor(false, {}), 10);
  sink.start({});
  for (int i = 0; i < 20; ++i) sink.submit(captured_with_body("/" + std::to_string(i), 100));
  sink.close();
  CHECK(sink.written == 20);
  CHECK(sink.lost == 0);
  CHECK(load_trace(file.path).exchanges.size() == 20);
}
