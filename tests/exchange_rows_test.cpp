// RowReader (format/exchange_rows.hpp) beside TraceReader on the same file: every field a row
// reads is the whole reading's, the figures (metrics::summarize) and the cached tokens
// (sweep::cached_tokens_of) come out the same, what it leaves out is empty; a trace of a newer
// minor version and a record with more parts than are read go through the whole reading.
#include <catch2/catch.hpp>

#include "format/exchange_rows.hpp"
#include "format/header.hpp"
#include "format/parts.hpp"
#include "metrics/stats.hpp"
#include "sweep/study.hpp"
#include "tests/temp_dir.hpp"

using namespace retrace;

namespace {

// A streamed answer of `tokens` tokens in two parts (reasoning, content), with logprobs and two
// alternatives each, one SSE event a token, then the usage event with cached tokens and [DONE].
Exchange streamed(std::uint64_t id, int tokens) {
  Exchange exchange;
  exchange.id = id;
  exchange.key = RequestKey{id * 7 + 1, id};
  exchange.session_id = "s" + std::to_string(id % 3);
  exchange.actual_send_ns = 1000 * static_cast<std::int64_t>(id);
  exchange.end_ns = 90'000'000;
  exchange.request = {"POST", "/v1/chat/completions", {{"content-type", "application/json"}},
                      R"({"model":"m","temperature":0.7,"seed":3,"stream":true})"};
  exchange.response.status = 200;
  exchange.response.streamed = true;
  exchange.response.headers = {{"content-type", "text/event-stream"}};
  exchange.dialect = "openai-chat";
  Choice reasoning, content;
  reasoning.part = Part::reasoning;
  reasoning.kind = content.kind = TokenKind::logprob_tokens;
  content.finish_reason = "stop";
  for (int t = 0; t < tokens; ++t) {
    std::int64_t at = 1'000'000 * (t + 1) + 37 * t * t;
    const Token token{t, "tok" + std::to_string(t), true, -0.5f * t, at};
    const std::vector<Alternative> top = {{t, "tok", -0.5f}, {t + 1, "alt", -1.5f}};
    (t < tokens / 3 ? reasoning : content).add_token(token, top);
    exchange.response.events.push_back({at, R"(data: {"choices":[{"delta":{"content":"tok"}}],"created":1})"});
  }
  exchange.choices = {reasoning, content};
  exchange.response.events.push_back(
      {89'000'000, R"(data: {"choices":[],"usage":{"prompt_tokens":11,"completion_tokens":)" + std::to_string(tokens) +
                       R"(,"prompt_tokens_details":{"cached_tokens":)" + std::to_string(id % 5) + "}}}"});
  exchange.response.events.push_back({89'500'000, "data: [DONE]"});
  exchange.usage = {11, tokens, 11 + tokens, tokens / 3};
  exchange.retries = static_cast<std::uint32_t>(id % 2);
  exchange.in_flight_at_send = 3;
  return exchange;
}

void check_row(const Exchange& row, const Exchange& whole) {
  CHECK(row.id == whole.id);
  CHECK(row.key == whole.key);
  CHECK(row.session_id == whole.session_id);
  CHECK(row.request == whole.request);
  CHECK(row.error == whole.error);
  CHECK(row.usage == whole.usage);
  CHECK(row.response.status == whole.response.status);
  CHECK(row.response.streamed == whole.response.streamed);
  CHECK(row.response.events.size() == whole.response.events.size());
  CHECK(row.choices.size() == whole.choices.size());
  for (std::size_t c = 0; c < row.choices.size(); ++c) {
    CHECK(row.choices[c].part == whole.choices[c].part);
    CHECK(row.choices[c].finish_reason == whole.choices[c].finish_reason);
    REQUIRE(row.choices[c].tokens.size() == whole.choices[c].tokens.size());
    for (std::size_t t = 0; t < row.choices[c].tokens.size(); ++t) {
      CHECK(row.choices[c].tokens[t].offset_ns == whole.choices[c].tokens[t].offset_ns);
      CHECK(row.choices[c].tokens[t].id == whole.choices[c].tokens[t].id);
      CHECK(row.choices[c].tokens[t].bytes.empty());  // left out
      CHECK(row.choices[c].top(row.choices[c].tokens[t]).empty());
    }
  }
  const auto figures = metrics::summarize(row), expected = metrics::summarize(whole);
  CHECK(figures.first_token_ns == expected.first_token_ns);
  CHECK(figures.first_output_token_ns == expected.first_output_token_ns);
  CHECK(figures.output_tokens.count == expected.output_tokens.count);
  CHECK(figures.reasoning_tokens.has_value() == expected.reasoning_tokens.has_value());
  CHECK(figures.token_gaps_ns == expected.token_gaps_ns);
  CHECK(figures.inference == expected.inference);
  CHECK(sweep::cached_tokens_of(row) == sweep::cached_tokens_of(whole));
}

void write(const std::filesystem::path& path, const std::vector<Exchange>& exchanges) {
  TraceWriter writer(path, new_trace_header(Source::replayed, "test", "http://127.0.0.1:1", "{}", Clock::system()));
  for (const auto& exchange : exchanges) writer.write(exchange);
  writer.close();
}

}  // namespace

TEST_CASE("The row reader reads what a row shows as the whole reader does and leaves the rest empty") {
  TempDir dir;
  std::vector<Exchange> exchanges;
  for (std::uint64_t id = 0; id < 300; ++id) exchanges.push_back(streamed(id, 1 + static_cast<int>(id % 40)));
  exchanges[5].response.streamed = false;  // a whole body, its cached count in it
  exchanges[5].response.events.clear();
  exchanges[5].response.body = R"({"usage":{"prompt_tokens_details":{"cached_tokens":9}}})";
  exchanges[6].error = {ErrorKind::timeout, "idle for 30 s"};
  write(dir / "t.rtrace", exchanges);
  RowReader rows(dir / "t.rtrace");
  TraceReader whole(dir / "t.rtrace");
  CHECK(rows.direct());
  Exchange row, expected;
  std::size_t read = 0;
  while (rows.next(row)) {
    REQUIRE(whole.next(expected));
    check_row(row, expected);
    CHECK(row.response.headers.empty());
    CHECK(row.response.body == (expected.response.streamed ? "" : expected.response.body));
    ++read;
  }
  CHECK_FALSE(whole.next(expected));
  CHECK(read == 300);
  CHECK(rows.read_whole() == 0);
}

TEST_CASE("A trace of a newer minor version than the row reader knows is read whole") {
  TempDir dir;
  std::vector<Exchange> exchanges{streamed(1, 8), streamed(2, 5)};
  write(dir / "t.rtrace", exchanges);
  REQUIRE(TraceReader(dir / "t.rtrace").header().format_minor == kFormatMinor);
  RowReader rows(dir / "t.rtrace", {}, kFormatMinor - 1);  // a reading that knows the version before
  CHECK_FALSE(rows.direct());
  Exchange row;
  for (const auto& exchange : exchanges) {
    REQUIRE(rows.next(row));
    CHECK(row.choices == exchange.choices);  // token bytes and alternatives included
    CHECK(row.response.events == exchange.response.events);
  }
  CHECK_FALSE(rows.next(row));
  CHECK(rows.read_whole() == 2);
  CHECK(RowReader(dir / "t.rtrace").direct());
}

TEST_CASE("A record with more parts than the reader reads goes through the whole reading") {
  TempDir dir;
  Exchange many = streamed(1, 4);
  many.choices.resize(kMaxParts + 1, many.choices.back());
  for (std::uint32_t c = 0; c < many.choices.size(); ++c) many.choices[c].index = c;
  write(dir / "t.rtrace", {streamed(0, 3), many, streamed(2, 3)});
  RowReader rows(dir / "t.rtrace");
  Exchange row;
  REQUIRE(rows.next(row));
  REQUIRE(rows.next(row));
  CHECK(row.choices.size() == kMaxParts);
  CHECK(row.decode_note.find("parts in the trace, the first 4096 read") != std::string::npos);
  CHECK(row.choices.front().tokens.front().bytes == "tok0");  // read whole
  REQUIRE(rows.next(row));
  CHECK(row.id == 2);
  CHECK(rows.read_whole() == 1);
}
