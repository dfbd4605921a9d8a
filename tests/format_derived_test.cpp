// Tests for format 1.7's derived tokens (format/token_deriver.hpp): a streamed exchange written with
// its tokens left to be rebuilt from its events (WriterOptions::derive_tokens) reads back exactly as
// it was decoded live, through every reader (next, next(ExchangeOutputs&), read_last); one whose
// events do not give its tokens back keeps them stored; a writer not asked to derive stores every
// token; a reader with no deriver says so; a decoder that reads the events otherwise is said in
// decode_note.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <initializer_list>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "format/exchange_rows.hpp"
#include "format/token_deriver.hpp"
#include "format/trace.hpp"
#include "llm/derive_tokens.hpp"
#include "tests/temp_dir.hpp"
#include "tests/llm_samples.hpp"
#include "tests/test_data.hpp"

using namespace retrace;
using llm::Dialect;
namespace fs = std::filesystem;

namespace {

// An exchange as record and replay make one: the body fed in `chunk`-byte reads (each read's
// arrival a microsecond after the last) through feed_sse into the decoder, its events kept, a cut
// tail kept raw, then finish.
Exchange decoded_live(const std::string& body, Dialect dialect, std::size_t chunk) {
  Exchange exchange;
  exchange.id = 7;
  exchange.request.method = "POST";
  exchange.request.target = "/v1/chat/completions";
  exchange.response.status = 200;
  exchange.response.streamed = true;
  exchange.first_byte_ns = 1000;
  llm::ResponseDecoder decoder(dialect);
  llm::SseParser parser;
  std::int64_t offset = 0;
  for (std::size_t at = 0; at < body.size(); at += chunk)
    llm::feed_sse(parser, std::string_view(body).substr(at, chunk), offset += 1000, &decoder,
                  &exchange.response.events);
  llm::keep_partial_event(parser, offset, exchange.response.events);
  exchange.end_ns = offset;
  decoder.finish(exchange);
  return exchange;
}

// The writer asked to derive (record and replay --derive-tokens).
WriterOptions deriving() {
  WriterOptions options;
  options.derive_tokens = true;
  return options;
}

struct RoundTrip {
  Exchange whole;           // next(Exchange&)
  ExchangeOutputs outputs;  // next(ExchangeOutputs&)
  Exchange last;            // read_last() after it
  std::uint64_t decompressed = 0;
};

// Written with WriterOptions::derive_tokens (`derive`), else with the default options: every token
// stored, as 1.6 wrote it.
RoundTrip round_trip(const Exchange& exchange, bool derive = true) {
  TempDir dir;
  {
    TraceWriter writer(dir / "t.rtrace", TraceHeader{}, derive ? deriving() : WriterOptions{});
    writer.write(exchange);
    writer.close();
  }
  llm::install_token_deriver();
  RoundTrip got;
  {
    TraceReader reader(dir / "t.rtrace");
    REQUIRE(reader.next(got.whole));
    CHECK_FALSE(reader.next(got.last));
    got.decompressed = reader.decompressed_bytes();
  }
  TraceReader reader(dir / "t.rtrace");
  REQUIRE(reader.next(got.outputs));
  reader.read_last(got.last);
  return got;
}

// The exchange comes back the same through every reader; true when its tokens were left out
// (the record is smaller than the one with them stored).
bool reads_back_the_same(const Exchange& exchange) {
  const RoundTrip derived = round_trip(exchange);
  const RoundTrip stored = round_trip(exchange, false);
  REQUIRE(derived.whole == exchange);
  REQUIRE(derived.last == exchange);
  ExchangeOutputs expected;
  outputs_of(exchange, expected);
  REQUIRE(derived.outputs == expected);
  REQUIRE(stored.whole == exchange);
  return derived.decompressed < stored.decompressed;
}

// A generated stream of `tokens` tokens decoded live and written alone to `path` (derived).
Exchange written_stream(std::size_t tokens, const fs::path& path) {
  std::mt19937_64 random(tokens);
  Exchange exchange = decoded_live(testing::completion_stream(tokens, random), Dialect::openai_completions, 300);
  TraceWriter writer(path, TraceHeader{}, deriving());
  writer.write(exchange);
  return exchange;
}

}  // namespace

TEST_CASE("Every stream of the shape corpus reads back as decoded live with its tokens derived") {
  std::size_t files = 0, derived = 0;
  const Dialect dialects[] = {Dialect::openai_completions, Dialect::openai_chat, Dialect::llamacpp_completion,
                              Dialect::tgi_generate, Dialect::openai_responses, Dialect::anthropic_messages};
  for (const fs::path& path : testing::sse_files()) {
    const std::string body = testing::read_path(path.string());
    ++files;
    for (Dialect dialect : dialects) {
      for (std::size_t chunk : {body.size() + 1, std::size_t{7}}) {
        INFO(path.string() << " as " << llm::to_string(dialect) << " in reads of " << chunk);
        derived += reads_back_the_same(decoded_live(body, dialect, chunk));
      }
    }
  }
  INFO(files << " streams, " << derived << " derived");
  CHECK(files >= 20);
  CHECK(derived >= 2 * files);  // each stream in its own dialect at least, both ways of reading it
}

TEST_CASE("Generated streams of every size up to 16k tokens read back the same with their tokens derived") {
  std::mt19937_64 random(44);
  std::vector<std::size_t> sizes;
  for (std::size_t n = 0; n <= 16; ++n) sizes.push_back(n);
  for (std::size_t n = 32; n <= 16384; n *= 2) sizes.push_back(n);
  for (std::size_t tokens : sizes) {
    INFO(tokens << " tokens");
    const Exchange exchange = decoded_live(testing::completion_stream(tokens, random), Dialect::openai_completions, 4096);
    REQUIRE(exchange.choices.size() == (tokens ? 1u : 0u));
    const RoundTrip derived = round_trip(exchange);
    const RoundTrip stored = round_trip(exchange, false);
    REQUIRE(derived.whole == exchange);
    ExchangeOutputs expected;
    outputs_of(exchange, expected);
    REQUIRE(derived.outputs == expected);
    // A token with two alternatives is ~100 bytes of Cap'n Proto; derived, none of it is stored.
    if (tokens > 0) CHECK(stored.decompressed - derived.decompressed >= 90 * tokens);
  }
}

TEST_CASE("A writer not asked to derive stores every token and stamps 1.7") {
  std::mt19937_64 random(17);
  const Exchange exchange = decoded_live(testing::completion_stream(1000, random), Dialect::openai_completions, 4096);
  TempDir dir;
  {
    TraceWriter writer(dir / "t.rtrace", TraceHeader{});  // the default options
    writer.write(exchange);
  }
  // Read with no deriver installed: a stored token needs none (a derived one would throw).
  install_token_deriver(nullptr);
  Exchange read;
  ExchangeOutputs outputs, expected;
  std::uint64_t stored_bytes = 0;
  {
    TraceReader reader(dir / "t.rtrace");
    CHECK(reader.header().format_minor == 7);
    REQUIRE(reader.next(read));
    stored_bytes = reader.decompressed_bytes();
    TraceReader outputs_reader(dir / "t.rtrace");
    REQUIRE(outputs_reader.next(outputs));
  }
  llm::install_token_deriver();
  CHECK(read == exchange);
  outputs_of(exchange, expected);
  CHECK(outputs == expected);
  // The same exchange written asking for derivation is ~100 bytes a token smaller.
  CHECK(stored_bytes >= round_trip(exchange).decompressed + 90 * 1000);
}

TEST_CASE("A stream whose kept events do not give its tokens back keeps them stored") {
  std::mt19937_64 random(3);
  const std::string body = testing::completion_stream(40, random);
  Exchange cut = decoded_live(body, Dialect::openai_completions, 512);
  // The events kept end before the tokens decoded (a body capped after decoding).
  cut.response.events.truncate(cut.response.events.size() / 2);
  CHECK_FALSE(reads_back_the_same(cut));
  // A stream cut mid-event derives: its tail is kept raw and decoded by neither.
  const Exchange torn = decoded_live(body.substr(0, body.size() / 2 + 13), Dialect::openai_completions, 100);
  CHECK(torn.response.events.size() > 1);
  CHECK(reads_back_the_same(torn));
}

TEST_CASE("Token ids that the events do not carry keep the tokens stored") {
  std::mt19937_64 random(5);
  Exchange exchange = decoded_live(testing::completion_stream(30, random), Dialect::openai_completions, 300);
  std::int32_t id = 100;
  for (Token& token : exchange.choices.at(0).tokens) token.id = id++;  // ids sent out of band
  exchange.choices[0].kind = TokenKind::token_ids;
  CHECK_FALSE(reads_back_the_same(exchange));
}

TEST_CASE("Reading derived tokens with no deriver installed is an error naming the missing deriver") {
  TempDir dir;
  const Exchange exchange = written_stream(5, dir / "t.rtrace");
  install_token_deriver(nullptr);
  Exchange out;
  TraceReader reader(dir / "t.rtrace");
  CHECK_THROWS_WITH(reader.next(out), Catch::Contains("no token deriver") && Catch::Contains("exchange 7"));
  llm::install_token_deriver();
  // Writing without one stores the tokens.
  install_token_deriver(nullptr);
  const bool derived = reads_back_the_same(exchange);
  llm::install_token_deriver();
  CHECK_FALSE(derived);
}

TEST_CASE("A decoder that reads the events otherwise than the writer's is said in decode_note") {
  TempDir dir;
  written_stream(6, dir / "t.rtrace");
  install_token_deriver([](std::string_view dialect, const std::vector<EventView>& events, std::vector<Choice>& choices,
                           DecodeWants wants) {
    llm::derive_choices(dialect, events, choices, wants);
    choices.at(0).tokens.pop_back();
  });
  Exchange out;
  TraceReader reader(dir / "t.rtrace");
  REQUIRE(reader.next(out));
  llm::install_token_deriver();
  CHECK(out.choices.at(0).tokens.size() == 5);
  CHECK_THAT(out.decode_note, Catch::Contains("tokens derived from the events differ") &&
                                  Catch::Contains("5 tokens in 1 parts, written: 6 in 1"));
}

namespace {

// The inputs of the fuzz corpora scripts/fuzz.sh grows (build/fuzz/corpus, or RETRACE_FUZZ_CORPUS)
// for `targets`, or `fallback`'s files where there are none.
std::vector<fs::path> corpus(std::initializer_list<const char*> targets, const fs::path& fallback) {
  const char* chosen = std::getenv("RETRACE_FUZZ_CORPUS");
  const fs::path root = chosen ? fs::path(chosen) : fs::path(RETRACE_SOURCE_ROOT) / "build/fuzz/corpus";
  std::vector<fs::path> inputs;
  for (const char* target : targets) {
    if (!fs::is_directory(root / target)) continue;
    for (const auto& entry : fs::recursive_directory_iterator(root / target))
      if (entry.is_regular_file()) inputs.push_back(entry.path());
  }
  if (inputs.empty() && fs::is_directory(fallback)) {
    WARN("no fuzz corpus at " << root << ": the files under " << fallback << " stand in");
    for (const auto& entry : fs::recursive_directory_iterator(fallback))
      if (entry.is_regular_file()) inputs.push_back(entry.path());
  }
  std::sort(inputs.begin(), inputs.end());
  return inputs;
}

}  // namespace

TEST_CASE("Every input of the decoder fuzz corpora decoded live reads back the same through write and read") {
  // One trace per dialect of every input, so that a grown corpus (thousands of inputs) costs a
  // decode and a write each, not a file each.
  const std::vector<fs::path> inputs = corpus({"decoder", "fast_event", "sse"}, RETRACE_TEST_DATA);
  CHECK(inputs.size() >= 20);
  for (Dialect dialect : {Dialect::openai_completions, Dialect::openai_chat, Dialect::llamacpp_completion,
                          Dialect::tgi_generate, Dialect::openai_responses, Dialect::anthropic_messages}) {
    std::vector<Exchange> written;
    TempDir dir;
    {
      TraceWriter writer(dir / "t.rtrace", TraceHeader{}, deriving());
      for (const fs::path& path : inputs) {
        written.push_back(decoded_live(testing::read_path(path.string()), dialect, 13));
        written.back().id = written.size();
        writer.write(written.back());
      }
    }
    TraceReader reader(dir / "t.rtrace");
    TraceReader outputs_reader(dir / "t.rtrace");
    Exchange read;
    ExchangeOutputs outputs, expected;
    for (const Exchange& exchange : written) {
      INFO(inputs[exchange.id - 1].string() << " as " << llm::to_string(dialect));
      REQUIRE(reader.next(read));
      REQUIRE(read == exchange);
      REQUIRE(outputs_reader.next(outputs));
      outputs_of(exchange, expected);
      REQUIRE(outputs == expected);
    }
    CHECK_FALSE(reader.next(read));
  }
}

TEST_CASE("Every trace of the fuzz corpora and the golden traces written again as 1.7 reads back the same") {
  std::vector<fs::path> traces = corpus({"trace_reader"}, fs::path(RETRACE_TEST_DATA) / "golden");
  traces.push_back(fs::path(RETRACE_SOURCE_ROOT) / "traces/gold-intents.rtrace");
  std::size_t exchanges = 0;
  for (const fs::path& path : traces) {
    INFO(path.string());
    LoadedTrace loaded;
    try {
      loaded = load_trace(path);
    } catch (const TraceError&) {
      continue;  // a fuzz input that is no trace at all
    }
    TempDir dir;
    {
      TraceWriter writer(dir / "again.rtrace", loaded.header, deriving());
      for (const Exchange& exchange : loaded.exchanges) writer.write(exchange);
    }
    const LoadedTrace again = load_trace(dir / "again.rtrace");
    REQUIRE(again.exchanges.size() == loaded.exchanges.size());
    for (std::size_t i = 0; i < loaded.exchanges.size(); ++i) REQUIRE(again.exchanges[i] == loaded.exchanges[i]);
    exchanges += loaded.exchanges.size();
  }
  CHECK(exchanges >= 40);  // the golden traces and the gold set at least
}

TEST_CASE("The row reader reads a derived exchange whole and a stored one directly") {
  TempDir dir;
  llm::install_token_deriver();
  std::mt19937_64 random(5);
  const Exchange exchange = decoded_live(testing::completion_stream(300, random), Dialect::openai_completions, 4096);
  {
    TraceWriter writer(dir / "t.rtrace", TraceHeader{}, deriving());
    writer.write(exchange);  // derived
    Exchange stored = exchange;
    stored.id = 8;
    stored.response.events.truncate(stored.response.events.size() / 2);  // no longer gives its tokens: stored
    writer.write(stored);
  }
  RowReader rows(dir / "t.rtrace");
  REQUIRE(rows.direct());
  Exchange row;
  REQUIRE(rows.next(row));
  REQUIRE(row.choices.size() == 1);
  // Each token's offset for ITL; no alternatives derived (a row shows none: kNoAlternatives).
  std::vector<Token> without_alternatives = exchange.choices[0].tokens;
  for (Token& token : without_alternatives) token.top_begin = token.top_count = 0;
  REQUIRE_FALSE(exchange.choices[0].alternatives.empty());
  CHECK(row.choices[0].tokens == without_alternatives);
  CHECK(row.choices[0].alternatives.empty());
  CHECK(rows.read_whole() == 1);
  REQUIRE(rows.next(row));
  CHECK(row.choices[0].tokens.size() == exchange.choices[0].tokens.size());
  CHECK(row.choices[0].tokens.back().offset_ns == exchange.choices[0].tokens.back().offset_ns);
  CHECK(rows.read_whole() == 1);  // the stored one was read directly
  CHECK_FALSE(rows.next(row));
}
