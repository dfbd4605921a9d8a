// Tests of the reader's outputs mode (TraceReader::next(ExchangeOutputs&) and read_last(), for
// diff): each record's outputs are exactly outputs_of() of the whole exchange, read_last() gives
// that whole exchange, and a damaged file ends the same way in both modes.
#include <catch2/catch.hpp>
#include <string>

#include "format/trace.hpp"
#include "tests/temp_dir.hpp"

using namespace retrace;

namespace {

// Every part an exchange can have, varied by id: bodies, events, labels, alternatives, several
// choices, missing ids, errors, expected answers.
Exchange full_exchange(std::uint64_t id) {
  Exchange exchange;
  exchange.id = id;
  if (id % 3) exchange.source_id = id + 100;
  exchange.request.method = "POST";
  exchange.request.target = "/v1/completions";
  exchange.request.headers = {{"content-type", "application/json"}};
  exchange.request.body = R"({"prompt":"q )" + std::to_string(id) + R"("})";
  exchange.key = request_key(exchange.request.method, exchange.request.target, exchange.request.body);
  exchange.response.status = 200;
  exchange.response.streamed = true;
  for (int e = 0; e < 4; ++e) exchange.response.events.push_back({e * 10, "data: {\"x\":" + std::to_string(e) + "}\n\n"});
  for (std::uint32_t c = 0; c < 1 + id % 3; ++c) {
    Choice choice;
    choice.index = c;
    choice.kind = id % 4 == 1 ? TokenKind::text_deltas : TokenKind::token_ids;
    for (std::int32_t t = 0; t < std::int32_t(id % 7); ++t) {
      Token token{id % 5 == 2 && t == 1 ? -1 : t + std::int32_t(id), "<" + std::to_string(t) + ">", true, -0.25f, t * 5};
      const std::vector<Alternative> top = {{t, token.bytes, -0.25f}, {t + 1, "alt", -1.5f}};
      choice.add_token(token, top);
    }
    choice.finish_reason = "stop";
    exchange.choices.push_back(std::move(choice));
  }
  if (id % 5 == 4) exchange.error = {ErrorKind::timeout, "no response in 30 s"};
  if (id % 2) exchange.expected = "answer " + std::to_string(id);
  exchange.labels = {{"run", "a"}};
  exchange.dialect = "openai-completions";
  return exchange;
}

void write_trace(const std::filesystem::path& path, std::uint64_t count) {
  TraceWriter writer(path, TraceHeader{}, WriterOptions{.flush_every = 3});
  for (std::uint64_t id = 0; id < count; ++id) writer.write(full_exchange(id));
  writer.close();
}

}  // namespace

TEST_CASE("The reader's outputs of each record are outputs_of its whole exchange - and read_last gives it whole") {
  TempDir dir;
  write_trace(dir / "t.rtrace", 40);
  TraceReader whole_reader(dir / "t.rtrace"), outputs_reader(dir / "t.rtrace");
  Exchange whole, last;
  ExchangeOutputs outputs, expected;
  std::size_t read = 0, with_error = 0, with_expected = 0, without_id = 0;
  while (whole_reader.next(whole)) {
    REQUIRE(outputs_reader.next(outputs));
    CHECK(whole == full_exchange(read));
    outputs_of(whole, expected);
    CHECK(outputs == expected);
    // Read whole only every other record: the outputs alone go on unaffected in between.
    if (read % 2 == 0) {
      outputs_reader.read_last(last);
      CHECK(last == whole);
    }
    with_error += outputs.error.kind != ErrorKind::none;
    with_expected += outputs.expected.has_value();
    for (const auto& choice : outputs.choices)
      for (std::int32_t id : choice.ids) without_id += id < 0;
    ++read;
  }
  CHECK_FALSE(outputs_reader.next(outputs));
  CHECK(read == 40);
  CHECK(with_error > 0);
  CHECK(with_expected > 0);
  CHECK(without_id > 0);
  CHECK(outputs_reader.recovery().clean());
  CHECK(outputs_reader.has_index());
}

TEST_CASE("read_last without a record read for its outputs is refused with a TraceError") {
  TempDir dir;
  write_trace(dir / "t.rtrace", 4);
  TraceReader reader(dir / "t.rtrace");
  Exchange exchange;
  ExchangeOutputs outputs;
  CHECK_THROWS_AS(reader.read_last(exchange), TraceError);
  REQUIRE(reader.next(outputs));
  REQUIRE(reader.next(exchange));  // a whole read leaves no outputs record to read whole
  CHECK_THROWS_AS(reader.read_last(exchange), TraceError);
  while (reader.next(outputs)) {
  }
  CHECK_THROWS_AS(reader.read_last(exchange), TraceError);  // past the end
}

TEST_CASE("A torn trace read for its outputs ends where the whole reader ends - with its recovery") {
  TempDir dir;
  write_trace(dir / "t.rtrace", 30);
  std::filesystem::resize_file(dir / "t.rtrace", std::filesystem::file_size(dir / "t.rtrace") * 2 / 3);
  TraceReader whole_reader(dir / "t.rtrace"), outputs_reader(dir / "t.rtrace");
  Exchange whole;
  ExchangeOutputs outputs;
  std::size_t wholes = 0, outputs_read = 0;
  while (whole_reader.next(whole)) ++wholes;
  while (outputs_reader.next(outputs)) ++outputs_read;
  CHECK(wholes > 0);
  CHECK(wholes < 30);
  CHECK(outputs_read == wholes);
  CHECK(outputs_reader.recovery().torn);
  CHECK(describe(outputs_reader.recovery()) == describe(whole_reader.recovery()));
}
