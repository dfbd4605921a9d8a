// Tests for llm/sse: SSE framing, however the bytes are split.
#include <catch2/catch.hpp>

#include "llm/llm.hpp"
#include "tests/llm_samples.hpp"

using namespace retrace;
using namespace retrace::llm;
using namespace retrace::testing;

// ---------------------------------------------------------------------------------------------
// SSE framing

TEST_CASE("SSE parser reads every framing feature of one stream fed whole") {
  std::string partial;
  const auto events = parse_in_pieces(kTrickyStream, {}, &partial);
  REQUIRE(events.size() == 6);
  CHECK(events[0].data == "{\"a\":1}");
  CHECK(events[0].raw == "\xEF\xBB\xBF: keep-alive comment\r\ndata: {\"a\":1}\r\n\r\n");
  CHECK(events[1].event == "delta");
  CHECK(events[1].data == "first line\nsecond line");
  CHECK(events[2].data == "cr only");
  CHECK(events[3].data == "");  // a comment-only block still accounts for its bytes
  CHECK(events[3].raw == ": just a comment\n\n");
  CHECK(events[4].data == "");  // "data" with no colon is an empty data line
  CHECK(events[5].data == "[DONE]");
  CHECK(partial == "data: unterminated");
  CHECK(concatenated_raws(events) + partial == kTrickyStream);
}

TEST_CASE("SSE parser gives the same events for every split point of a stream") {
  const auto whole = parse_in_pieces(kTrickyStream, {});
  for (std::size_t cut = 0; cut <= kTrickyStream.size(); ++cut) {
    std::string partial;
    const auto events = parse_in_pieces(kTrickyStream, {cut}, &partial);
    INFO("cut at " << cut);
    std::vector<std::string> data;
    for (const auto& event : events) data.push_back(event.data);
    std::vector<std::string> whole_data;
    for (const auto& event : whole) whole_data.push_back(event.data);
    CHECK(data == whole_data);
    CHECK(concatenated_raws(events) + partial == kTrickyStream);
  }
}

TEST_CASE("SSE parser gives the same events for every pair of split points and byte by byte") {
  const auto whole = parse_in_pieces(kTrickyStream, {});
  auto data_of = [](const std::vector<ParsedEvent>& events) {
    std::vector<std::string> data;
    for (const auto& event : events) data.push_back(event.data + "|" + event.event);
    return data;
  };
  for (std::size_t first = 0; first <= kTrickyStream.size(); first += 3) {
    for (std::size_t second = first; second <= kTrickyStream.size(); ++second) {
      std::string partial;
      const auto events = parse_in_pieces(kTrickyStream, {first, second}, &partial);
      REQUIRE(data_of(events) == data_of(whole));
      REQUIRE(concatenated_raws(events) + partial == kTrickyStream);
    }
  }
  std::vector<std::size_t> every_byte;
  for (std::size_t i = 1; i < kTrickyStream.size(); ++i) every_byte.push_back(i);
  CHECK(data_of(parse_in_pieces(kTrickyStream, every_byte)) == data_of(whole));
}

TEST_CASE("SSE parser keeps the raw bytes of each event exact when events arrive whole") {
  const std::string stream = "data: a\r\n\r\ndata: b\n\ndata: c\r\r";
  const auto events = parse_in_pieces(stream, {});
  REQUIRE(events.size() == 3);
  CHECK(events[0].raw == "data: a\r\n\r\n");
  CHECK(events[1].raw == "data: b\n\n");
  CHECK(events[2].raw == "data: c\r\r");
}

TEST_CASE("SSE parser frames the events that arrive whole in the bytes fed without copying them") {
  // The first event is split across the two feeds and is assembled; the two after it, and the
  // single data line of each, are views of the second feed's bytes.
  const std::string first = "data: a\nda";
  const std::string second = "ta: b\n\ndata: c\n\nevent: e\ndata: d1\ndata: d2\n\ndata: tail";
  SseParser parser;
  std::vector<ParsedEvent> events;
  std::vector<bool> raw_in_place, data_in_place;
  auto inside = [&](std::string_view view) {
    return view.data() >= second.data() && view.data() + view.size() <= second.data() + second.size();
  };
  auto on_event = [&](const SseEvent& event) {
    events.push_back({std::string(event.raw), std::string(event.data), std::string(event.event)});
    raw_in_place.push_back(inside(event.raw));
    data_in_place.push_back(inside(event.data));
  };
  parser.feed(first, on_event);
  parser.feed(second, on_event);
  REQUIRE(events.size() == 3);
  CHECK(events[0] == ParsedEvent{"data: a\ndata: b\n\n", "a\nb", ""});
  CHECK(events[1] == ParsedEvent{"data: c\n\n", "c", ""});
  CHECK(events[2] == ParsedEvent{"event: e\ndata: d1\ndata: d2\n\n", "d1\nd2", "e"});
  CHECK(raw_in_place == std::vector<bool>{false, true, true});
  CHECK(data_in_place == std::vector<bool>{false, true, false});  // two data lines are joined
  CHECK(parser.take_partial() == "data: tail");
}

TEST_CASE("SSE parser moves the LF of a CRLF split after a blank line into the next event") {
  // The \r ends the event at once (no stall waiting for a \n); the late \n is kept, not lost.
  const std::string stream = "data: a\r\n\r\ndata: b\r\n\r\n";
  const std::size_t cut = std::string("data: a\r\n\r").size();
  std::string partial;
  const auto events = parse_in_pieces(stream, {cut}, &partial);
  REQUIRE(events.size() == 2);
  CHECK(events[0].raw == "data: a\r\n\r");
  CHECK(events[1].raw == "\ndata: b\r\n\r\n");
  CHECK(events[1].data == "b");
  CHECK(partial.empty());
}

TEST_CASE("SSE parser reports an unterminated event as partial and starts afresh after it") {
  SseParser parser;
  int events = 0;
  parser.feed("data: {\"x\":", [&](const SseEvent&) { ++events; });
  CHECK(events == 0);
  CHECK(parser.has_partial());
  CHECK(parser.take_partial() == "data: {\"x\":");
  CHECK_FALSE(parser.has_partial());
  std::string data;
  parser.feed("data: next\n\n", [&](const SseEvent& event) { data = event.data; });
  CHECK(data == "next");
}

TEST_CASE("SSE parser handles a BOM split across feeds and a stream that only looks like one") {
  std::vector<std::string> data;
  SseParser parser;
  auto collect = [&](const SseEvent& event) { data.emplace_back(event.data); };
  parser.feed("\xEF", collect);
  parser.feed("\xBB", collect);
  parser.feed("\xBF" "data: x\n\n", collect);
  REQUIRE(data == std::vector<std::string>{"x"});
  SseParser other;
  data.clear();
  other.feed("\xEF" "data: y\n\n", collect);  // not a BOM: the line's name is "\xEFdata"
  CHECK(data == std::vector<std::string>{""});
}

TEST_CASE("SSE parser assembles a megabyte event fed one byte at a time") {
  std::string payload(1 << 20, 'x');
  const std::string stream = "data: " + payload + "\n\n";
  SseParser parser;
  std::size_t size = 0;
  int events = 0;
  for (char c : stream) {
    parser.feed(std::string_view(&c, 1), [&](const SseEvent& event) {
      ++events;
      size = event.data.size();
    });
  }
  CHECK(events == 1);
  CHECK(size == payload.size());
}

TEST_CASE("SSE parser finds a line break at every offset of a long line") {
  // The break search takes 32 then 16 bytes a step, then single bytes: a break in either half of
  // a step, in the tail, and a \r, \n or \r\n, each after data lines of every length up to 100.
  for (const char* line_end : {"\n", "\r\n", "\r"}) {
    for (std::size_t length = 0; length <= 100; ++length) {
      std::string data;
      for (std::size_t i = 0; i < length; ++i) data += static_cast<char>('a' + i % 26);
      const std::string stream = "data: " + data + line_end + line_end + "data: x" + line_end + line_end;
      const auto events = parse_in_pieces(stream, {});
      INFO("length " << length);
      REQUIRE(events.size() == 2);
      CHECK(events[0].data == data);
      CHECK(events[1].data == "x");
      CHECK(concatenated_raws(events) == stream);
    }
  }
}

TEST_CASE("SSE parser takes a field whose name only begins with data for another field") {
  // A "data:" line's colon is found without a search: "data2:", "database:" and a bare "data"
  // are not such a line.
  const auto events = parse_in_pieces("data2: x\ndatabase: y\ndata\ndata: z\n\n", {});
  REQUIRE(events.size() == 1);
  CHECK(events[0].data == "\nz");
}
