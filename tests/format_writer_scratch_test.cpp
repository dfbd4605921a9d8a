// format/trace_writer.cpp's room for records (format/frame_input.hpp; issue 44): a record larger
// than the room left after the open frame's records is built again in a room it fits, so every
// record is one segment, the first long one too, built in one warm block instead of segments
// allocated (and their pages faulted in) anew; every record reads back the same. Its bytes are
// what Cap'n Proto's own MallocMessageBuilder makes of the same record over a large zeroed first
// segment (the writer before it), checked at production size: a streamed 16k-token answer with
// logprobs and five alternatives a token (~10 MB a record), among short exchanges. The file's
// records are read here as the stream framing lays them out (format/trace.capnp): u32 segments - 1, u32 words of each, padded to 8 bytes, the segments.
#include <capnp/message.h>
#include <catch2/catch.hpp>
#include <zstd.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "format/trace.hpp"
#include "format/wire.hpp"
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

// A streamed completion of `tokens` tokens, one event each, with logprobs and 5 alternatives.
Exchange streamed(std::uint64_t id, std::size_t tokens) {
  Exchange exchange;
  exchange.id = id;
  exchange.key = RequestKey{id * 7 + 1, id * 13 + 5};
  exchange.request.method = "POST";
  exchange.request.target = "/v1/completions";
  exchange.request.body = R"({"model":"m","prompt":"Tell a long story.","stream":true,"logprobs":5})";
  exchange.response.status = 200;
  exchange.response.streamed = true;
  exchange.response.headers = {{"content-type", "text/event-stream"}};
  exchange.dialect = "openai-completions";
  Choice& choice = exchange.choices.emplace_back();
  choice.finish_reason = "length";
  for (std::size_t t = 0; t < tokens; ++t) {
    const std::int64_t at = static_cast<std::int64_t>(t) * 11'000 + static_cast<std::int64_t>(id);
    const std::string word = " w" + std::to_string((t * 2654435761u + id) % 50'000);
    std::string data = "data: {\"id\":\"cmpl-" + std::to_string(id) +
                       "\",\"object\":\"text_completion\",\"choices\":[{\"index\":0,\"text\":\"" + word +
                       "\",\"logprobs\":{\"tokens\":[\"" + word + "\"],\"token_logprobs\":[-0." +
                       std::to_string(t % 997) + "],\"top_logprobs\":[{";
    Token token;
    token.id = static_cast<std::int32_t>((t * 31 + id) % 50'000);
    token.bytes = word;
    token.has_logprob = true;
    token.logprob = -static_cast<float>(t % 997) / 1000.0f;
    token.offset_ns = at;
    std::vector<Alternative> top;
    for (int a = 0; a < 5; ++a) {
      Alternative& alternative = top.emplace_back();
      alternative.id = static_cast<std::int32_t>((t * 17 + static_cast<std::size_t>(a)) % 50'000);
      alternative.bytes = " a" + std::to_string(alternative.id);
      alternative.logprob = token.logprob - static_cast<float>(a) * 0.25f;
      data += (a ? ",\"" : "\"") + alternative.bytes + "\":" + std::to_string(alternative.logprob);
    }
    data += "}]},\"finish_reason\":null}]}\n\n";
    choice.add_token(token, top);
    exchange.response.events.push_back(at, data);
  }
  exchange.usage = Usage{.prompt_tokens = 5, .completion_tokens = static_cast<std::int64_t>(tokens),
                         .total_tokens = static_cast<std::int64_t>(tokens) + 5};
  exchange.end_ns = static_cast<std::int64_t>(tokens) * 11'000 + 5;
  return exchange;
}

// One record as MallocMessageBuilder lays it over a zeroed first segment it fits: the segment
// table (u32 0, u32 words) and the segment.
template <class Fill>
std::string reference_record(Fill&& fill) {
  std::vector<capnp::word> scratch(4u << 20);  // 32 MiB, zeroed: larger than any record here
  capnp::MallocMessageBuilder builder(kj::arrayPtr(scratch.data(), scratch.size()));
  fill(builder.initRoot<wire::Record>());
  auto segments = builder.getSegmentsForOutput();
  REQUIRE(segments.size() == 1);
  const std::uint32_t table[2] = {0, static_cast<std::uint32_t>(segments[0].size())};
  std::string bytes(reinterpret_cast<const char*>(table), sizeof table);
  bytes.append(reinterpret_cast<const char*>(segments[0].begin()), segments[0].size() * sizeof(capnp::word));
  return bytes;
}

// The file decompressed (every zstd frame; skippable ones skipped).
std::string decompressed(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ZSTD_DStream* stream = ZSTD_createDStream();
  std::string out;
  std::vector<char> buffer(1 << 20);
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

TEST_CASE("the writer's records are byte for byte what Cap'n Proto's own builder makes of them") {
  TempDir dir;
  TraceHeader header;
  header.tool_version = "test";
  header.target = "http://127.0.0.1:1";
  header.source = Source::replayed;
  const std::vector<std::size_t> sizes = {256, 256, 16'384, 256, 16'384, 256};
  std::vector<Exchange> exchanges;
  for (std::size_t i = 0; i < sizes.size(); ++i) exchanges.push_back(streamed(i, sizes[i]));
  {
    TraceWriter writer(dir / "run.rtrace", header, WriterOptions{.zstd_level = 1});
    for (const auto& exchange : exchanges) writer.write(exchange);
    writer.close();
  }

  TraceHeader stamped = header;
  stamped.format_major = kFormatMajor;
  stamped.format_minor = kFormatMinor;
  std::string expected = reference_record([&](wire::Record::Builder record) {
    detail::fill_header(record.initHeader(), stamped);
  });
  for (const auto& exchange : exchanges)
    expected += reference_record([&](wire::Record::Builder record) {
      detail::fill_exchange(record.initExchange(), exchange);
    });
  const std::string written = decompressed(dir / "run.rtrace");
  REQUIRE(written.size() == expected.size());
  const bool same = written == expected;  // not printed whole: ~20 MB
  CHECK(same);

  TraceReader reader(dir / "run.rtrace");
  Exchange read;
  std::size_t i = 0;
  for (; reader.next(read); ++i) {
    REQUIRE(i < exchanges.size());
    CHECK(read.response.events == exchanges[i].response.events);
    CHECK(read.choices == exchanges[i].choices);
  }
  CHECK(i == exchanges.size());
}
