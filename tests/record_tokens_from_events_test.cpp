// Tests for the producer's word that a streamed exchange's tokens are its events'
// (format/token_deriver.hpp, TokensFromEvents), as record's trace thread gives it: finish_exchange
// says it where its decoder saw exactly the stored events, and a trace written on that word (the
// writer's verifying decode skipped) reads back the tokens decoded live, for every stream of the
// shape corpus in every dialect and generated streams up to 16k tokens, plain and gzip'd. A stream
// stored as received, of no known dialect or not streamed gets no word; a word said wrongly is
// caught by the check the unit tests and debug builds keep, and without it would be written wrong.
// And record's trace thread (TraceSink) passes the word on: with --derive-tokens it writes the
// streams it decoded without a second decode (the deriver, counted, is not called). Finished lean
// (kNoLogprobValues: no logprob value converted, no alternative built, as the trace thread decodes
// with --derive-tokens), the word still holds, checked, and the trace reads back the full decode.
#include <catch2/catch.hpp>

#include <atomic>
#include <filesystem>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "format/header.hpp"
#include "format/token_deriver.hpp"
#include "format/trace.hpp"
#include "record/record.hpp"
#include "record/trace_sink.hpp"
#include "tests/encoders.hpp"
#include "tests/llm_samples.hpp"
#include "tests/temp_dir.hpp"
#include "tests/test_data.hpp"

using namespace retrace;
namespace fs = std::filesystem;

namespace {

// A path of each dialect's (llm::detect_dialect), for a POST asking for a stream.
const char* const kTargets[] = {"/v1/completions", "/v1/chat/completions", "/completion",
                                "/generate_stream", "/v1/responses",       "/v1/messages"};

// What a proxy worker captures of `body` (content-coded as `coding` says) streamed to `target`
// in `chunk`-byte reads, each a microsecond after the last.
record::CapturedExchange captured(std::string_view body, const std::string& target, std::size_t chunk,
                                  const std::string& coding = "") {
  record::CapturedExchange capture;
  capture.exchange.request.method = "POST";
  capture.exchange.request.target = target;
  capture.exchange.request.body = R"({"model":"m","stream":true})";
  capture.exchange.response.status = 200;
  capture.exchange.first_byte_ns = 1000;
  capture.event_stream = true;
  capture.content_encoding = coding;
  std::int64_t offset = 0;
  for (std::size_t at = 0; at < body.size(); at += chunk) capture.body.append(body.substr(at, chunk), offset += 1000);
  capture.exchange.end_ns = offset;
  return capture;
}

struct Finished {
  Exchange exchange;
  bool word = false;  // finish_exchange's: its tokens are its events'
  DecodeWants live;   // what its decode kept
};

// As record's trace thread finishes an exchange (TraceSink::run), asking for `live` (with
// --derive-tokens: kNoLogprobValues).
Finished finish(record::CapturedExchange capture, std::size_t decode_limit = kMaxBlobBytes, DecodeWants live = {}) {
  static const Redactor redactor(false, {});
  Finished finished;
  finished.live = live;
  finished.word = record::finish_exchange(std::move(capture), redactor, 1, finished.exchange, decode_limit, &finished.live);
  return finished;
}

// The writer's check of a word (on in the unit tests: tests/catch_main.cpp) off while this lives:
// the release build's writer, which takes the word without decoding again.
struct CheckOff {
  CheckOff() { check_tokens_from_events(false); }
  ~CheckOff() { check_tokens_from_events(true); }
};

// The installed deriver counted while this lives: each call is one decode of an exchange's events
// (the writer's verifying one, or a reader's).
std::atomic<std::size_t> derivations{0};
TokenDeriver counted_deriver = nullptr;
void counting_deriver(std::string_view dialect, const std::vector<EventView>& events,
                      std::vector<Choice>& choices, DecodeWants wants) {
  ++derivations;
  counted_deriver(dialect, events, choices, wants);
}
struct CountDerivations {
  CountDerivations() {
    counted_deriver = installed_token_deriver();
    derivations = 0;
    install_token_deriver(counting_deriver);
  }
  ~CountDerivations() { install_token_deriver(counted_deriver); }
};

struct Written {
  std::vector<Exchange> read;
  std::uint64_t decompressed = 0;
};

// Writes `exchanges` as record does with --derive-tokens (each with its word when `words`, else
// with the tokens stored: the default options) and reads them back.
Written write_and_read(const std::vector<Finished>& exchanges, bool words = true) {
  TempDir dir;
  {
    WriterOptions options;
    options.derive_tokens = words;
    TraceWriter writer(dir / "t.rtrace", TraceHeader{}, options);
    for (const Finished& finished : exchanges)
      write_with_word(writer, finished.exchange, words && finished.word, finished.live);
    writer.close();
  }
  Written written;
  TraceReader reader(dir / "t.rtrace");
  for (Exchange exchange; reader.next(exchange);) written.read.push_back(exchange);
  written.decompressed = reader.decompressed_bytes();
  return written;
}

// Read back as decoded live, with the writer's check (which throws on a wrong word) and without it.
void require_read_back_as_decoded(const std::vector<Finished>& exchanges) {
  Written checked;
  REQUIRE_NOTHROW(checked = write_and_read(exchanges));
  CheckOff off;
  const Written trusted = write_and_read(exchanges);
  REQUIRE(trusted.read.size() == exchanges.size());
  for (std::size_t i = 0; i < exchanges.size(); ++i) {
    INFO("exchange " << i);
    REQUIRE(trusted.read[i] == exchanges[i].exchange);
  }
  REQUIRE(checked.read == trusted.read);
}

std::size_t tokens_of(const Exchange& exchange) {
  std::size_t tokens = 0;
  for (const Choice& choice : exchange.choices) tokens += choice.tokens.size();
  return tokens;
}

}  // namespace

TEST_CASE("Every stream of the shape corpus recorded with finish_exchange's word reads back as decoded live") {
  std::vector<Finished> exchanges;
  std::size_t files = 0, words = 0;
  for (const fs::path& path : testing::sse_files()) {
    const std::string body = testing::read_path(path.string());
    ++files;
    for (const char* target : kTargets)
      for (std::size_t chunk : {body.size() + 1, std::size_t{7}}) {
        exchanges.push_back(finish(captured(body, target, chunk)));
        words += exchanges.back().word;
      }
  }
  CHECK(files >= 20);
  CHECK(words == exchanges.size());  // every one streamed, in a known dialect, decoded whole
  require_read_back_as_decoded(exchanges);
}

TEST_CASE("Generated streams up to 16k tokens plain and gzip coded recorded with the word read back as decoded live") {
  std::mt19937_64 random(44);
  std::vector<Finished> exchanges;
  std::size_t tokens = 0;
  for (std::size_t n = 0; n <= 16384; n = n < 16 ? n + 1 : 2 * n) {
    const std::string body = testing::completion_stream(n, random);
    exchanges.push_back(finish(captured(body, "/v1/completions", 4096)));
    exchanges.push_back(finish(captured(test::gzip(body), "/v1/completions", 1000, "gzip")));
    for (std::size_t last = 1; last <= 2; ++last) {
      REQUIRE(exchanges[exchanges.size() - last].word);
      REQUIRE(tokens_of(exchanges[exchanges.size() - last].exchange) == n);
    }
    tokens += 2 * n;
  }
  REQUIRE(tokens == 2 * (16 * 17 / 2 + 32767 - 31));
  require_read_back_as_decoded(exchanges);
  // Written on the word, each token's ~100 bytes of Cap'n Proto were left out.
  CheckOff off;
  CHECK(write_and_read(exchanges, false).decompressed - write_and_read(exchanges).decompressed >= 90 * tokens);
}

TEST_CASE("A stream stored as received or of no known dialect or not streamed gets no word") {
  std::mt19937_64 random(9);
  const std::string body = testing::completion_stream(200, random);
  // Past the decode limit: the events are the reads as received, the decoder saw a prefix.
  Finished past = finish(captured(body, "/v1/completions", 512), 20000);
  CHECK(past.exchange.decode_note.find("bytes as received") != std::string::npos);
  CHECK_FALSE(past.word);
  // gzip that does not undo: stored as received.
  CHECK_FALSE(finish(captured("not gzip at all " + body, "/v1/completions", 512, "gzip")).word);
  // No dialect from the path: nothing decoded.
  Finished unknown = finish(captured(body, "/v1/something", 512));
  CHECK(tokens_of(unknown.exchange) == 0);
  CHECK_FALSE(unknown.word);
  // Not an event stream: its tokens are not derived anyway.
  record::CapturedExchange whole = captured(R"({"choices":[{"index":0,"text":"hi"}]})", "/v1/completions", 4096);
  whole.event_stream = false;
  CHECK_FALSE(finish(std::move(whole)).word);
  // And the exchange that got a word: the control.
  CHECK(finish(captured(body, "/v1/completions", 512)).word);
}

TEST_CASE("A wrong word is caught by the writer's check and without the check is written wrong") {
  std::mt19937_64 random(5);
  const Finished honest = finish(captured(testing::completion_stream(300, random), "/v1/completions", 4096));
  REQUIRE(honest.word);
  REQUIRE(tokens_of(honest.exchange) == 300);
  std::vector<std::vector<Finished>> wrong(3, {honest});
  wrong[0][0].exchange.choices[0].tokens[17].bytes = " edited";      // tokens edited after decoding
  wrong[1][0].exchange.choices[0].tokens[3].id = 4242;               // an id sent out of band
  wrong[2][0].exchange.response.events.truncate(100);                  // events trimmed after decoding
  for (const std::vector<Finished>& exchanges : wrong) {
    CHECK_THROWS_AS(write_and_read(exchanges), std::logic_error);
    CHECK(write_and_read(exchanges, false).read.at(0) == exchanges[0].exchange);  // stored: as it was
    std::vector<Finished> unsaid = exchanges;
    unsaid[0].word = false;
    CHECK(write_and_read(unsaid).read.at(0) == exchanges[0].exchange);  // verified: stored as it was
    CheckOff off;
    // Taken on its word, the exchange is not what was decoded: the check is what catches it.
    CHECK(write_and_read(exchanges).read.at(0) != exchanges[0].exchange);
  }
}

TEST_CASE("Streams finished lean keep their word and read back as the full decode of their events") {
  std::mt19937_64 random(61);
  std::vector<Finished> full, lean;
  std::size_t lean_decodes = 0;
  auto both = [&](const record::CapturedExchange& capture) {
    full.push_back(finish(capture));
    lean.push_back(finish(capture, kMaxBlobBytes, kNoLogprobValues));
    lean_decodes += lean.back().live == kNoLogprobValues;
  };
  for (const fs::path& path : testing::sse_files()) {
    const std::string body = testing::read_path(path.string());
    for (const char* target : kTargets) both(captured(body, target, 7));
  }
  for (std::size_t n : {0, 1, 300, 16384}) {
    const std::string body = testing::completion_stream(n, random);
    both(captured(body, "/v1/completions", 4096));
    both(captured(test::gzip(body), "/v1/completions", 1000, "gzip"));  // decoded full: no prediction
  }
  CHECK(lean_decodes == lean.size() - 4);
  for (std::size_t i = 0; i < full.size(); ++i) {
    INFO("exchange " << i);
    CHECK(lean[i].word == full[i].word);
    // What the writer stores of the live choices, and the rest of the exchange, as the full decode.
    Exchange cut = full[i].exchange;
    for (Choice& choice : cut.choices) {
      if (lean[i].live != kNoLogprobValues) break;  // gzip: decoded in full
      choice.alternatives.clear();
      for (Token& token : choice.tokens) token.top_begin = token.top_count = 0, token.logprob = 0;
    }
    CHECK(lean[i].exchange == cut);
  }
  // Written on the lean word (checked, then trusted): read back, the full decode.
  Written checked;
  REQUIRE_NOTHROW(checked = write_and_read(lean));
  CheckOff off;
  const Written trusted = write_and_read(lean);
  REQUIRE(trusted.read.size() == full.size());
  for (std::size_t i = 0; i < full.size(); ++i) REQUIRE(trusted.read[i] == full[i].exchange);
  CHECK(checked.read == trusted.read);
}

TEST_CASE("A wrong lean word is caught by the writer's check") {
  std::mt19937_64 random(8);
  const Finished honest =
      finish(captured(testing::completion_stream(300, random), "/v1/completions", 4096), kMaxBlobBytes, kNoLogprobValues);
  REQUIRE(honest.word);
  REQUIRE(honest.live == kNoLogprobValues);
  REQUIRE_NOTHROW(write_and_read({honest}));
  std::vector<std::vector<Finished>> wrong(4, {honest});
  wrong[0][0].exchange.choices[0].tokens.pop_back();                  // a count the events do not give
  wrong[1][0].exchange.choices[0].tokens[5].has_logprob = false;      // a logprob the events give
  wrong[2][0].exchange.choices[0].tokens[9].offset_ns += 1;           // an arrival
  wrong[3][0].live = DecodeWants{};                                   // a lean decode said to be full
  for (const std::vector<Finished>& exchanges : wrong) CHECK_THROWS_AS(write_and_read(exchanges), std::logic_error);
}

TEST_CASE("Record's trace thread writes the streams it decoded on their word without decoding them again") {
  std::mt19937_64 random(23);
  std::vector<std::string> bodies;
  for (std::size_t n : {1, 40, 300, 2000}) bodies.push_back(testing::completion_stream(n, random));
  std::vector<Finished> live;  // the same captures, finished as the trace thread does
  for (const std::string& body : bodies) live.push_back(finish(captured(body, "/v1/completions", 700)));
  CheckOff off;  // the release build's writer: a word taken is a decode saved
  CountDerivations count;

  // The control: the same exchanges written with derivation on and no word are each decoded once.
  std::vector<Finished> unsaid = live;
  for (Finished& finished : unsaid) finished.word = false;
  derivations = 0;
  {
    TempDir dir;
    WriterOptions options;
    options.derive_tokens = true;
    TraceWriter writer(dir / "t.rtrace", TraceHeader{}, options);
    for (const Finished& finished : unsaid) write_with_word(writer, finished.exchange, false);
    writer.close();
  }
  REQUIRE(derivations == live.size());

  TempDir dir;
  WriterOptions options;  // record --derive-tokens
  options.derive_tokens = true;
  {
    record::TraceSink sink(dir / "rec.rtrace",
                   new_trace_header(Source::recorded, "test", "http://upstream", "{}", Clock::system()),
                   options, Redactor(false, {}));
    derivations = 0;
    sink.start({});
    for (const std::string& body : bodies) sink.submit(captured(body, "/v1/completions", 700));
    sink.close();
    REQUIRE(sink.written == bodies.size());
    CHECK(derivations == 0);  // the trace thread took finish_exchange's word
  }
  // Written derived (the reader decodes each once) and read back as decoded live.
  derivations = 0;
  TraceReader reader(dir / "rec.rtrace");
  std::size_t i = 0;
  for (Exchange exchange; reader.next(exchange); ++i) {
    REQUIRE(i < live.size());
    live[i].exchange.id = exchange.id;
    CHECK(exchange.choices == live[i].exchange.choices);
  }
  CHECK(i == live.size());
  CHECK(derivations == live.size());
}

TEST_CASE("A stream too large for one record is decoded in full and its tokens kept with their logprobs") {
  // With --derive-tokens, a record past max_frame_bytes is written without its events and with the
  // tokens as decoded live: so the trace thread decodes such an exchange in full (written_whole).
  std::mt19937_64 random(31);
  const std::string body = testing::completion_stream(300, random);
  TempDir dir;
  WriterOptions options;
  options.derive_tokens = true;
  options.max_frame_bytes = 64u << 10;  // below the stream's bytes
  REQUIRE(body.size() > options.max_frame_bytes);
  {
    record::TraceSink sink(dir / "rec.rtrace",
                           new_trace_header(Source::recorded, "test", "http://upstream", "{}", Clock::system()),
                           options, Redactor(false, {}));
    sink.start({});
    sink.submit(captured(body, "/v1/completions", 700));
    sink.close();
    REQUIRE(sink.written == 1);
  }
  TraceReader reader(dir / "rec.rtrace");
  Exchange read;
  REQUIRE(reader.next(read));
  CHECK(read.decode_note.find("not kept") != std::string::npos);  // written without its events
  CHECK(read.response.events.empty());
  const Finished full = finish(captured(body, "/v1/completions", 700));
  CHECK(read.choices == full.exchange.choices);  // logprobs and alternatives as the full decode's
  CHECK(read.choices.at(0).alternatives.size() == 600);
}
