// net::decode_arrived's identity event stream held raw: framed where its bytes arrived, its events
// adopting the body's buffer (no copy), and still exactly what framing a copy gives (feed_sse into
// an Events, the rule every reader was written against): the same events, arrival times, tokens,
// cut tail and trace bytes, for events of 1 B to 200 KB in reads cut anywhere, at the body's block
// boundaries too, and for bodies past the raw bound (copied, as before).
#include <catch2/catch.hpp>

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "format/trace.hpp"
#include "llm/llm.hpp"
#include "net/arrived_body.hpp"
#include "tests/temp_dir.hpp"

using namespace retrace;
using namespace retrace::net;

namespace {

// A completions event whose text is `size` bytes (its JSON around it ~90 more).
std::string event_of(std::size_t size, std::size_t n) {
  std::string text(size, static_cast<char>('a' + n % 26));
  return "data: {\"id\":\"c\",\"object\":\"text_completion\",\"choices\":[{\"index\":0,\"text\":\"" + text +
         "\",\"finish_reason\":null}]}\n\n";
}

// Events of `size` until about `bytes` (at least one), then [DONE].
std::string stream_of(std::size_t size, std::size_t bytes) {
  std::string body;
  for (std::size_t n = 0; n == 0 || body.size() + size < bytes; ++n) body += event_of(size, n);
  return body + "data: [DONE]\n\n";
}

// Where each read ends, for one way of cutting `body`.
enum class Cut { per_event, fixed, at_blocks, mid_event };

std::vector<std::size_t> read_ends(const std::string& body, Cut cut) {
  std::vector<std::size_t> ends;
  if (cut == Cut::per_event) {
    for (std::size_t at = body.find("\n\n"); at != std::string::npos; at = body.find("\n\n", at + 2))
      ends.push_back(at + 2);
  } else if (cut == Cut::at_blocks) {  // around every block boundary: one byte before, at, after
    for (std::size_t block = ArrivedBody::kBlockBytes; block + 1 < body.size(); block += ArrivedBody::kBlockBytes)
      for (std::size_t end : {block - 1, block, block + 1}) ends.push_back(end);
  } else {
    for (std::size_t at = 4093; at < body.size(); at += 4093) ends.push_back(at);
  }
  if (ends.empty() || ends.back() != body.size()) ends.push_back(body.size());
  return ends;
}

// `body` in reads ending at `ends`, into a buffer reserved for `like` bytes (a worker's later
// stream: ArrivedBody::reserve_like from its last; 0: none, grown by doubling).
ArrivedBody arrive(std::string_view body, const std::vector<std::size_t>& ends, std::size_t like) {
  ArrivedBody arrived;
  if (like > 0) arrived.reserve_like({like, ends.size(), 3 * ends.size()});
  std::size_t from = 0;
  std::int64_t offset = 0;
  for (std::size_t end : ends) {
    arrived.append(body.substr(from, end - from), offset += 1000);
    from = end;
  }
  return arrived;
}

Exchange exchange_for() {
  Exchange exchange;
  exchange.id = 7;
  exchange.request.method = "POST";
  exchange.request.target = "/v1/completions";
  exchange.request.body = R"({"model":"m","prompt":"p","stream":true})";
  exchange.response.status = 200;
  return exchange;
}

// The reference: the same reads framed into an Events that copies them (feed_sse), the cut tail
// kept at `end_ns`.
Exchange framed_by_copy(const ArrivedBody& arrived, std::int64_t end_ns) {
  Exchange exchange = exchange_for();
  exchange.response.streamed = true;
  llm::ResponseDecoder decoder(llm::Dialect::openai_completions);
  llm::SseParser parser;
  std::string read;
  arrived.for_each_read([&](std::string_view piece, std::int64_t offset_ns, bool read_ends) {
    read.append(piece);
    if (read_ends) {
      llm::feed_sse(parser, read, offset_ns, &decoder, &exchange.response.events);
      read.clear();
    }
    return true;
  });
  llm::keep_partial_event(parser, end_ns, exchange.response.events);
  decoder.finish(exchange);
  return exchange;
}

std::string file_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::string trace_of(const Exchange& exchange, const std::filesystem::path& path) {
  TraceHeader header;
  header.tool_version = "test";
  {
    TraceWriter writer(path, header);
    writer.write(exchange);
    writer.close();
  }
  return file_bytes(path);
}

}  // namespace

TEST_CASE("an identity event stream held raw keeps its bytes where they arrived and frames them as a copy would") {
  TempDir dir;
  std::size_t streams = 0, adopted = 0, events = 0;
  // Event sizes 1 B to 200 KB, each size's stream to ~200 KB (held raw) or, one size in three, to
  // ~600 KB (past the raw bound: compressed in blocks, framed by copying as before).
  for (std::size_t size = 1; size <= (200u << 10); size = size * 5 / 4 + 1) {
    const std::size_t bytes = (streams % 3 == 2 ? 600u : 200u) << 10;
    const std::string body = stream_of(size, bytes);
    for (Cut cut : {Cut::per_event, Cut::fixed, Cut::at_blocks, Cut::mid_event}) {
      const std::string_view kept = cut == Cut::mid_event ? std::string_view(body).substr(0, body.size() - 7) : body;
      ArrivedBody arrived = arrive(kept, read_ends(std::string(kept), cut), kept.size());
      const std::int64_t end_ns = arrived.last_offset_ns() + 5;
      const Exchange reference = framed_by_copy(arrived, end_ns);
      const bool raw = arrived.compressed_blocks() == 0;
      const char* arrived_at = nullptr;  // where a raw body's bytes are
      arrived.for_each_read([&](std::string_view piece, std::int64_t, bool) {
        arrived_at = piece.data();
        return false;
      });

      Exchange exchange = exchange_for();
      llm::ResponseDecoder decoder(llm::Dialect::openai_completions);
      const auto decoded = decode_arrived(arrived, true, "", exchange.response, &decoder, end_ns);
      decoder.finish(exchange);
      INFO("event size " << size << ", body " << kept.size() << " bytes, cut " << static_cast<int>(cut));
      CHECK_FALSE(decoded.as_received);
      CHECK(decoded.note.empty());
      REQUIRE(exchange.response.events.size() == reference.response.events.size());
      CHECK(exchange.response.events == reference.response.events);
      CHECK(exchange.response.events.bytes() == kept);
      CHECK(exchange.choices == reference.choices);
      CHECK(exchange.decode_note == reference.decode_note);
      if (raw) {  // adopted: the events' bytes are the very buffer the reads went into
        CHECK(arrived.size() == 0);
        CHECK(exchange.response.events.bytes().data() == arrived_at);
        ++adopted;
      }
      if (streams % 16 == 0)  // the trace written is the copying path's, byte for byte
        CHECK(trace_of(exchange, dir.path / "adopted.rtrace") == trace_of(reference, dir.path / "copied.rtrace"));
      events += reference.response.events.size();
    }
    ++streams;
  }
  CHECK(adopted >= 100);
  CHECK(events >= 10000);
}

TEST_CASE("an event stream past the decode limit or content coded is framed by copying as before") {
  const std::string body = stream_of(100, 50u << 10);
  ArrivedBody arrived = arrive(body, read_ends(body, Cut::per_event), body.size());
  const Exchange reference = framed_by_copy(arrived, 9);
  const char* arrived_at = nullptr;
  arrived.for_each_read([&](std::string_view piece, std::int64_t, bool) {
    arrived_at = piece.data();
    return false;
  });
  // A limit the stream's worst case (a position per byte) passes, though its events fit it.
  Exchange exchange = exchange_for();
  llm::ResponseDecoder decoder(llm::Dialect::openai_completions);
  const auto decoded = decode_arrived(arrived, true, "", exchange.response, &decoder, 9, 4 * body.size());
  decoder.finish(exchange);
  CHECK_FALSE(decoded.as_received);
  CHECK(exchange.response.events == reference.response.events);
  CHECK(exchange.response.events.bytes().data() != arrived_at);
  CHECK(exchange.choices == reference.choices);
}

TEST_CASE("a body whose buffer holds far more than its bytes is copied to their size not adopted") {
  const std::string body = stream_of(300, 100u << 10);
  // A buffer reserved for twice the stream: a worker whose last stream was twice as long.
  ArrivedBody arrived = arrive(body, read_ends(body, Cut::per_event), 2 * body.size());
  REQUIRE(arrived.held_bytes() > 2 * body.size());
  const Exchange reference = framed_by_copy(arrived, 9);
  Exchange exchange = exchange_for();
  llm::ResponseDecoder decoder(llm::Dialect::openai_completions);
  decode_arrived(arrived, true, "", exchange.response, &decoder, 9);
  decoder.finish(exchange);
  CHECK(exchange.response.events == reference.response.events);
  CHECK(exchange.choices == reference.choices);
  // The bytes at their size and the positions: not the buffer's twice.
  CHECK(exchange.response.events.memory() < body.size() + body.size() / 4);
}

TEST_CASE("events adopt only bytes that are exactly what their positions cover") {
  Events events;
  events.push_position(10, 3);
  events.push_position(20, 2);
  std::string short_bytes = "abcd";
  CHECK_FALSE(events.adopt(short_bytes));
  CHECK(short_bytes == "abcd");
  std::string bytes = "abcde";
  REQUIRE(events.adopt(bytes));
  CHECK(events.size() == 2);
  CHECK(events[0].offset_ns == 10);
  CHECK(events[0].data == "abc");
  CHECK(events[1].data == "de");
  CHECK(events == Events{{10, "abc"}, {20, "de"}});
  std::string more = "";
  CHECK_FALSE(events.adopt(more));  // it holds bytes already
}
