// Tests for format/'s bound on an exchange's parts (format/parts.hpp): a trace record holding
// 10^5 small parts (a few MB on disk, made by an older writer or crafted) is read with its first
// 4,096 parts and a note saying how many were left in the file, by every reader mode — whole
// exchanges (export, cat), outputs only (diff) — and the exchanges after it are read whole.
#include <catch2/catch.hpp>

#include <string>

#include "format/parts.hpp"
#include "format/trace.hpp"
#include "tests/temp_dir.hpp"

using namespace retrace;

namespace {

constexpr std::size_t kMany = 100'000;

Exchange with_parts(std::uint64_t id, std::size_t parts) {
  Exchange exchange;
  exchange.id = id;
  exchange.request.method = "POST";
  exchange.request.target = "/v1/embeddings";
  exchange.response.status = 200;
  exchange.decode_note = "decoded";
  exchange.choices.resize(parts);
  for (std::size_t i = 0; i < parts; ++i) {
    exchange.choices[i].index = static_cast<std::uint32_t>(i);
    exchange.choices[i].part = Part::embedding;
    exchange.choices[i].values = {1.0};
  }
  return exchange;
}

void write_trace(const std::filesystem::path& path) {
  TraceHeader header;
  header.source = Source::recorded;
  TraceWriter writer(path, header);
  writer.write(with_parts(0, kMany));
  writer.write(with_parts(1, 3));
  writer.close();
}

}  // namespace

TEST_CASE("A record of 10^5 parts is read with the first 4096 and a note in whole exchanges") {
  TempDir dir;
  write_trace(dir / "t.rtrace");
  TraceReader reader(dir / "t.rtrace");
  Exchange exchange;
  REQUIRE(reader.next(exchange));
  CHECK(exchange.choices.size() == kMaxParts);
  CHECK(exchange.choices.back().index == kMaxParts - 1);
  CHECK(exchange.decode_note == "decoded; 100000 parts in the trace, the first 4096 read");
  REQUIRE(reader.next(exchange));
  CHECK(exchange.choices.size() == 3);
  CHECK(exchange.decode_note == "decoded");
  CHECK_FALSE(reader.next(exchange));
  CHECK(reader.recovery().clean());
}

TEST_CASE("A record of 10^5 parts is read with the first 4096 in outputs only") {
  TempDir dir;
  write_trace(dir / "t.rtrace");
  TraceReader reader(dir / "t.rtrace");
  ExchangeOutputs outputs;
  REQUIRE(reader.next(outputs));
  CHECK(outputs.choices.size() == kMaxParts);
  REQUIRE(reader.next(outputs));
  CHECK(outputs.choices.size() == 3);
  CHECK_FALSE(reader.next(outputs));
}
