// Tests of format/: the trace writer and reader, the JSON view, request keys and import.
#include <capnp/message.h>
#include <capnp/serialize.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>
#include <zstd.h>

#include <atomic>
#include <boost/json.hpp>
#include <catch2/catch.hpp>
#include <fstream>
#include <random>
#include <sstream>

#include "format/header.hpp"
#include "dataset/import.hpp"
#include "format/json.hpp"
#include "base/text.hpp"
#include "format/trace.hpp"
#include "tests/temp_dir.hpp"
#include "trace.capnp.h"

using namespace retrace;
namespace fs = std::filesystem;

namespace {

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

void write_file(const fs::path& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

TraceHeader full_header() {
  TraceHeader header;
  header.tool_version = "9.8.7";
  header.created_unix_ns = 1'700'000'000'123'456'789;
  header.source = Source::replayed;
  header.target = "http://127.0.0.1:8000";
  header.settings = R"({"concurrency":8,"rate":null})";
  header.host = "testhost";
  header.labels = {{"run", "night"}, {"repeat", "3"}};
  header.server_info = R"({"models":["x"]})";
  return header;
}

// Every field set to something other than its default.
Exchange full_exchange(std::uint64_t id) {
  Exchange exchange;
  exchange.id = id;
  exchange.source_id = id + 1000;
  exchange.session_id = "session-" + std::to_string(id % 3);
  exchange.start_unix_ns = 1'700'000'000'000'000'000 + static_cast<std::int64_t>(id);
  exchange.intended_send_ns = 10 * static_cast<std::int64_t>(id);
  exchange.actual_send_ns = 10 * static_cast<std::int64_t>(id) + 3;
  exchange.first_byte_ns = 5000;
  exchange.end_ns = 90000;
  exchange.request.method = "POST";
  exchange.request.target = "/v1/chat/completions?x=1";
  exchange.request.headers = {{"content-type", "application/json"}, {"x-trace", "a\tb"}};
  exchange.request.body = R"({"model":"m","messages":[{"role":"user","content":"hi )" +
                          std::to_string(id) + R"("}],"stream":true})";
  exchange.key = request_key(exchange.request.method, exchange.request.target, exchange.request.body);
  exchange.response.status = 200;
  exchange.response.headers = {{"content-type", "text/event-stream"}};
  exchange.response.body = std::string("\x00\xff\xfe binary", 10);
  exchange.response.streamed = true;
  exchange.response.events = {{100, "data: {\"a\":1}\n\n"}, {200, std::string("\xc3\x28", 2)}};
  Choice choice;
  choice.index = 1;
  choice.kind = TokenKind::token_ids;
  choice.finish_reason = "length";
  for (int t = 0; t < 4; ++t) {
    Token token;
    token.id = 100 + t;
    token.bytes = t == 3 ? std::string("\xe2\x82", 2) : "tok" + std::to_string(t);
    token.has_logprob = t != 2;
    token.logprob = token.has_logprob ? -0.25f * static_cast<float>(t) - 0.125f : 0.0f;
    token.offset_ns = 1000 * t;
    std::vector<Alternative> top;
    if (t != 1) top = {{7, "a", -0.5f}, {-1, "b\n", -1.75f}, {9, std::string("\xff", 1), -3.0f}};
    choice.add_token(token, top);
  }
  // The other parts (format 1.3): a tool call with its name, an embedding with its values.
  Choice call;
  call.kind = TokenKind::text_deltas;
  call.finish_reason = "stop";
  call.part = Part::tool_call;
  call.tool_call = 1;
  call.tool_name = "get_weather";
  call.tokens.push_back(Token{-1, "{\"a\":1}", false, 0, 7000, {}});
  Choice vector;
  vector.index = 2;
  vector.part = Part::embedding;
  vector.values = {0.25, -1.5e-7, 3.0};
  exchange.choices = {choice, call, vector};
  exchange.usage = {12, 4, 16, 3};
  exchange.error = {static_cast<ErrorKind>(id % kErrorKindCount), "error message " + std::to_string(id)};
  exchange.labels = {{"concurrency", "8"}, {"repeat", "2"}};
  if (id % 2 == 0) exchange.expected = "billing";
  exchange.dialect = "openai-chat";
  exchange.decode_note = id % 2 ? "partial" : "";
  return exchange;
}

Exchange small_exchange(std::uint64_t id) {
  Exchange exchange;
  exchange.id = id;
  exchange.request.method = "POST";
  exchange.request.target = "/v1/completions";
  exchange.request.body = R"({"prompt":"question )" + std::to_string(id) + R"(","max_tokens":4})";
  exchange.key = request_key(exchange.request.method, exchange.request.target, exchange.request.body);
  exchange.response.status = 200;
  Choice choice;
  choice.kind = TokenKind::text_deltas;
  choice.tokens = {Token{-1, "ok", false, 0, 10, {}}, Token{-1, std::to_string(id), false, 0, 20, {}}};
  exchange.choices.push_back(choice);
  return exchange;
}

void write_trace(const fs::path& path, const std::vector<Exchange>& exchanges,
                 WriterOptions options = {}) {
  TraceWriter writer(path, full_header(), options);
  for (const auto& exchange : exchanges) writer.write(exchange);
  writer.close();
}

// A zstd frame holding `messages` (already in stream framing), as a stock tool would write it.
std::string zstd_frame(const std::string& raw) {
  std::string out(ZSTD_compressBound(raw.size()), '\0');
  std::size_t size = ZSTD_compress(out.data(), out.size(), raw.data(), raw.size(), 3);
  REQUIRE(!ZSTD_isError(size));
  out.resize(size);
  return out;
}

std::string framed(capnp::MessageBuilder& builder) {
  auto words = capnp::messageToFlatArray(builder);
  auto bytes = words.asBytes();
  return std::string(reinterpret_cast<const char*>(bytes.begin()), bytes.size());
}

}  // namespace

TEST_CASE("a trace round-trips every field of the header and of each exchange") {
  TempDir dir;
  std::vector<Exchange> exchanges;
  for (std::uint64_t id = 0; id < 9; ++id) exchanges.push_back(full_exchange(id));
  write_trace(dir / "t.rtrace", exchanges, WriterOptions{.flush_every = 4});

  LoadedTrace loaded = load_trace(dir / "t.rtrace");
  TraceHeader expected_header = full_header();
  expected_header.format_minor = kFormatMinor;  // what the writer stamps
  CHECK(loaded.header == expected_header);
  CHECK_FALSE(loaded.recovery.torn);
  REQUIRE(loaded.exchanges.size() == exchanges.size());
  for (std::size_t i = 0; i < exchanges.size(); ++i) CHECK(loaded.exchanges[i] == exchanges[i]);
}

TEST_CASE("the reader reuses one Exchange and clears what a later record lacks") {
  TempDir dir;
  Exchange bare;
  bare.id = 2;
  write_trace(dir / "t.rtrace", {full_exchange(1), bare});
  TraceReader reader(dir / "t.rtrace");
  Exchange out;
  REQUIRE(reader.next(out));
  CHECK(out == full_exchange(1));
  REQUIRE(reader.next(out));
  CHECK(out == bare);
  CHECK_FALSE(reader.next(out));
}

TEST_CASE("UTF-8 is strict about overlong forms and surrogates and values past U+10FFFF") {
  CHECK(is_valid_utf8(""));
  CHECK(is_valid_utf8("plain ascii"));
  CHECK(is_valid_utf8("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"));  // é € 😀
  CHECK(is_valid_utf8("\xF4\x8F\xBF\xBF"));                           // U+10FFFF
  CHECK_FALSE(is_valid_utf8("\xC0\xAF"));                               // overlong '/'
  CHECK_FALSE(is_valid_utf8("\xE0\x80\xAF"));                          // overlong '/'
  CHECK_FALSE(is_valid_utf8("\xF0\x80\x80\xAF"));                     // overlong '/'
  CHECK_FALSE(is_valid_utf8("\xED\xA0\x80"));                          // U+D800, a surrogate
  CHECK_FALSE(is_valid_utf8("\xF4\x90\x80\x80"));                     // U+110000
  CHECK_FALSE(is_valid_utf8("\xF8\x88\x80\x80\x80"));                // five-byte form
  CHECK_FALSE(is_valid_utf8("\x80"));                                   // a lone continuation byte
  CHECK_FALSE(is_valid_utf8("caf\xC3"));                                // cut short
}

TEST_CASE("a lone UTF-16 surrogate escape becomes U+FFFD and a pair or an escaped backslash stays") {
  auto replaced = [](std::string text) {
    auto count = replace_lone_surrogate_escapes(text);
    return std::pair{text, count};
  };
  CHECK(replaced(R"({"a": "x\ud83d y"})") == std::pair{std::string(R"({"a": "x\ufffd y"})"), std::size_t{1}});
  CHECK(replaced(R"("\ud83d\ude00")") == std::pair{std::string(R"("\ud83d\ude00")"), std::size_t{0}});
  CHECK(replaced(R"("\uDE00 and \uD83D")") == std::pair{std::string(R"("\ufffd and \ufffd")"), std::size_t{2}});
  // A high half before another high half: the first is lone, the second pairs.
  CHECK(replaced(R"("\ud83d\ud83d\ude00")") == std::pair{std::string(R"("\ufffd\ud83d\ude00")"), std::size_t{1}});
  CHECK(replaced(R"("\\ud83d")") == std::pair{std::string(R"("\\ud83d")"), std::size_t{0}});  // text, not an escape
  CHECK(replaced(R"("\u00e9\n\ud8")") == std::pair{std::string(R"("\u00e9\n\ud8")"), std::size_t{0}});  // cut short
  // What comes out is JSON Boost.JSON takes.
  std::string line = R"({"messages": [{"role": "user", "content": "hi \ud83d"}]})";
  CHECK(replace_lone_surrogate_escapes(line) == 1);
  CHECK(boost::json::parse(line).at("messages").at(0).at("content").as_string() == "hi \xEF\xBF\xBD");
}

TEST_CASE("a UTF-8 prefix leaves out only a character cut short at the end") {
  CHECK(utf8_whole_prefix("") == 0);
  CHECK(utf8_whole_prefix("abc") == 3);
  CHECK(utf8_whole_prefix("caf\xC3\xA9") == 5);
  CHECK(utf8_whole_prefix("caf\xC3") == 3);
  CHECK(utf8_whole_prefix("a\xE2\x82") == 1);
  CHECK(utf8_whole_prefix("a\xF0\x9F\x98") == 1);
  CHECK(utf8_whole_prefix("a\xF0\x9F\x98\x80") == 5);
  CHECK(utf8_whole_prefix("\x80\x80") == 2);  // no lead byte to wait for: nothing held back
}

TEST_CASE("the JSON view round-trips every field and uses base64 for bytes that are not UTF-8") {
  for (std::uint64_t id = 0; id < 4; ++id) {
    Exchange exchange = full_exchange(id);
    std::string line = exchange_line(exchange);
    auto parsed = boost::json::parse(line).as_object();
    Exchange back;
    exchange_from_json(parsed.at("exchange").as_object(), back);
    CHECK(back == exchange);
  }
  TraceHeader header = full_header();
  auto parsed = boost::json::parse(header_line(header)).as_object();
  CHECK(header_from_json(parsed.at("header").as_object()) == header);
  CHECK(bytes_to_json(std::string("\xff\x00", 2)).is_object());
  CHECK(bytes_to_json("héllo").is_string());
  CHECK(base64_decode(base64_encode(std::string("\x01\x02\x03\xfa\xfb", 5))) ==
        std::string("\x01\x02\x03\xfa\xfb", 5));
}

TEST_CASE("a trace cut at every byte of its last frame reads back every complete record") {
  TempDir dir;
  std::vector<Exchange> exchanges;
  for (std::uint64_t id = 0; id < 7; ++id) exchanges.push_back(small_exchange(id));
  // Same content with and without the index: the bytes before the index are identical.
  write_trace(dir / "indexed.rtrace", exchanges, WriterOptions{.flush_every = 2});
  write_trace(dir / "plain.rtrace", exchanges, WriterOptions{.flush_every = 2, .write_index = false});
  std::string whole = read_file(dir / "indexed.rtrace");
  std::uint64_t frames_end = fs::file_size(dir / "plain.rtrace");
  REQUIRE(whole.substr(0, frames_end) == read_file(dir / "plain.rtrace"));

  TraceReader indexed(dir / "indexed.rtrace");
  Exchange scratch;
  while (indexed.next(scratch)) {
  }
  REQUIRE(indexed.has_index());
  REQUIRE(indexed.index().frames.size() == 5);  // header, 2, 2, 2, 1
  std::uint64_t last_frame = indexed.index().frames.back().offset;

  for (std::uint64_t cut = last_frame; cut < whole.size(); ++cut) {
    INFO("cut at " << cut);
    write_file(dir / "cut.rtrace", std::string_view(whole).substr(0, cut));
    LoadedTrace loaded = load_trace(dir / "cut.rtrace");
    if (cut == last_frame) {
      // A cut exactly between frames leaves a shorter, whole trace.
      REQUIRE(loaded.exchanges.size() == 6);
      CHECK_FALSE(loaded.recovery.torn);
    } else if (cut < frames_end) {
      REQUIRE(loaded.exchanges.size() == 6);
      CHECK(loaded.recovery.torn);
      CHECK(loaded.recovery.dropped_from_offset == last_frame);
      CHECK(loaded.recovery.dropped_bytes == cut - last_frame);
    } else {
      REQUIRE(loaded.exchanges.size() == 7);
      CHECK(loaded.recovery.torn == (cut != frames_end));  // a cut index is a torn tail too
    }
    for (std::size_t i = 0; i < loaded.exchanges.size(); ++i)
      REQUIRE(loaded.exchanges[i] == exchanges[i]);
  }
}

TEST_CASE("random byte corruption gives an error or recovered records and never a crash") {
  TempDir dir;
  std::vector<Exchange> exchanges;
  for (std::uint64_t id = 0; id < 12; ++id) exchanges.push_back(full_exchange(id));
  write_trace(dir / "t.rtrace", exchanges, WriterOptions{.flush_every = 3});
  const std::string whole = read_file(dir / "t.rtrace");
  int errors = 0, recovered = 0;
  for (unsigned seed = 1; seed <= 300; ++seed) {
    std::mt19937 random(seed);
    std::string bytes = whole;
    int flips = 1 + static_cast<int>(random() % 8);
    for (int k = 0; k < flips; ++k)
      bytes[random() % bytes.size()] = static_cast<char>(random() & 0xff);
    write_file(dir / "bad.rtrace", bytes);
    INFO("seed " << seed);
    try {
      LoadedTrace loaded = load_trace(dir / "bad.rtrace");
      // What is recovered is what was written: exchanges in order, each whole and unaltered
      // (damaged frames in the middle are skipped, the frames after them still read).
      REQUIRE(loaded.exchanges.size() <= exchanges.size());
      for (std::size_t i = 0; i < loaded.exchanges.size(); ++i) {
        REQUIRE(loaded.exchanges[i].id < exchanges.size());
        REQUIRE(loaded.exchanges[i] == exchanges[loaded.exchanges[i].id]);
        if (i > 0) REQUIRE(loaded.exchanges[i].id > loaded.exchanges[i - 1].id);
      }
      // Nothing is lost silently: fewer exchanges than written means reported damage.
      if (loaded.exchanges.size() < exchanges.size()) REQUIRE_FALSE(loaded.recovery.clean());
      ++recovered;
    } catch (const TraceError& e) {
      CHECK(std::string(e.what()).find("bad.rtrace") != std::string::npos);
      ++errors;
    }
  }
  // Both outcomes occur, so both branches above were exercised.
  CHECK(errors > 0);
  CHECK(recovered > 0);
}

TEST_CASE("a damaged frame in the middle is skipped and every frame after it still reads") {
  TempDir dir;
  std::vector<Exchange> exchanges;
  for (std::uint64_t id = 0; id < 12; ++id) exchanges.push_back(full_exchange(id));
  write_trace(dir / "t.rtrace", exchanges, WriterOptions{.flush_every = 1});
  const std::string whole = read_file(dir / "t.rtrace");
  TraceReader indexed(dir / "t.rtrace");
  Exchange scratch;
  while (indexed.next(scratch)) {
  }
  REQUIRE(indexed.has_index());
  const auto& frames = indexed.index().frames;  // frame 0 is the header
  REQUIRE(frames.size() == 13);

  SECTION("one frame's bytes overwritten") {
    std::string bytes = whole;
    for (std::uint64_t at = frames[4].offset + 20; at < frames[5].offset - 4; ++at) bytes[at] = 'x';
    write_file(dir / "bad.rtrace", bytes);
    LoadedTrace loaded = load_trace(dir / "bad.rtrace");
    REQUIRE(loaded.exchanges.size() == 11);  // all but exchange 3, in frame 4
    for (const auto& exchange : loaded.exchanges) {
      CHECK(exchange.id != 3);
      CHECK(exchange == exchanges[exchange.id]);
    }
    CHECK_FALSE(loaded.recovery.torn);
    CHECK(loaded.recovery.skipped_regions == 1);
    CHECK(loaded.recovery.first_skipped_offset == frames[4].offset);
    CHECK(loaded.recovery.skipped_bytes == frames[5].offset - frames[4].offset);
    CHECK(describe(loaded.recovery).find("skipped 1 damaged region") != std::string::npos);
  }
  SECTION("two frames' magic numbers destroyed") {
    std::string bytes = whole;
    bytes[frames[2].offset] = 0;
    bytes[frames[9].offset + 1] = 0;
    write_file(dir / "bad.rtrace", bytes);
    LoadedTrace loaded = load_trace(dir / "bad.rtrace");
    CHECK(loaded.exchanges.size() == 10);
    CHECK(loaded.recovery.skipped_regions == 2);
    CHECK_FALSE(loaded.recovery.torn);
  }
}

TEST_CASE("a list that claims more elements than its message holds is refused without the memory") {
  TempDir dir;
  capnp::MallocMessageBuilder header_message;
  header_message.initRoot<wire::Record>().initHeader().setFormatMajor(1);
  capnp::MallocMessageBuilder bomb_message;
  bomb_message.initRoot<wire::Record>().initExchange().initChoices(1)[0].setIndex(7);
  capnp::MallocMessageBuilder good_message;
  good_message.initRoot<wire::Record>().initExchange().setId(9);
  std::string bomb = framed(bomb_message);
  // The choices list's tag word (a struct pointer whose offset is the element count) claims 20 M
  // elements of zero words each: a few bytes that Cap'n Proto accepts, charging them to the
  // traversal limit, and that would take gigabytes as Choice objects.
  std::uint64_t tag = (std::uint64_t{1} << 2) |
                      (std::uint64_t{wire::Choice::_capnpPrivate::dataWordSize} << 32) |
                      (std::uint64_t{wire::Choice::_capnpPrivate::pointerCount} << 48);
  std::uint64_t bomb_tag = std::uint64_t{20'000'000} << 2;
  bool patched = false;
  for (std::size_t at = 8; at + 8 <= bomb.size(); at += 8) {
    std::uint64_t word;
    std::memcpy(&word, bomb.data() + at, 8);
    if (word == tag) {
      std::memcpy(bomb.data() + at, &bomb_tag, 8);
      patched = true;
    }
  }
  REQUIRE(patched);
  write_file(dir / "bomb.rtrace", zstd_frame(framed(header_message)) + zstd_frame(bomb) +
                                      zstd_frame(framed(good_message)));
  LoadedTrace loaded = load_trace(dir / "bomb.rtrace");
  REQUIRE(loaded.exchanges.size() == 1);
  CHECK(loaded.exchanges[0].id == 9);
  CHECK(loaded.recovery.skipped_regions == 1);
  CHECK(loaded.recovery.skipped_reason.find("choices list declares 20000000 elements") !=
        std::string::npos);
}

TEST_CASE("a pipe is refused instead of read") {
  TempDir dir;
  REQUIRE(::mkfifo((dir / "fifo").c_str(), 0600) == 0);
  CHECK_THROWS_WITH(load_trace(dir / "fifo"), Catch::Contains("not a regular file"));
}

TEST_CASE("garbage Cap'n Proto messages inside valid zstd frames are rejected without a crash") {
  TempDir dir;
  capnp::MallocMessageBuilder header_message;
  header_message.initRoot<wire::Record>().initHeader().setFormatMajor(1);
  std::string header_frame = zstd_frame(framed(header_message));
  for (unsigned seed = 1; seed <= 300; ++seed) {
    std::mt19937 random(seed);
    std::string raw = framed([&]() -> capnp::MallocMessageBuilder& {
      static capnp::MallocMessageBuilder good;
      static bool built = false;
      if (!built) {
        auto exchange = good.initRoot<wire::Record>().initExchange();
        exchange.initChoices(2)[0].initTokens(3)[1].setBytes(kj::heapArray<kj::byte>(5));
        exchange.initLabels(1)[0].setKey("k");
        built = true;
      }
      return good;
    }());
    // Keep the segment table, scribble over the message words.
    for (std::size_t i = 8; i < raw.size(); ++i)
      if (random() % 4 == 0) raw[i] = static_cast<char>(random() & 0xff);
    if (seed % 5 == 0) raw[random() % 8] = static_cast<char>(random() & 0xff);
    write_file(dir / "g.rtrace", header_frame + zstd_frame(raw));
    try {
      LoadedTrace loaded = load_trace(dir / "g.rtrace");
      CHECK(loaded.exchanges.size() <= 1);
    } catch (const TraceError&) {
    }
  }
}

TEST_CASE("every error kind round-trips and a kind a newer minor added reads as protocol") {
  TempDir dir;
  std::vector<Exchange> exchanges;
  for (std::size_t k = 0; k < kErrorKindCount; ++k) {
    Exchange exchange = small_exchange(k);
    exchange.error = {static_cast<ErrorKind>(k), k ? "kind " + std::to_string(k) : ""};
    exchanges.push_back(exchange);
  }
  write_trace(dir / "kinds.rtrace", exchanges);
  LoadedTrace loaded = load_trace(dir / "kinds.rtrace");
  REQUIRE(loaded.exchanges.size() == kErrorKindCount);
  for (std::size_t k = 0; k < kErrorKindCount; ++k) CHECK(loaded.exchanges[k].error == exchanges[k].error);
  CHECK(loaded.exchanges[kErrorKindCount - 2].error.kind == ErrorKind::server_error);
  CHECK(loaded.exchanges[kErrorKindCount - 1].error.kind == ErrorKind::truncated);

  // A file of format 1.2 (before server_error and truncated) whose exchange carries a kind this
  // reader does not know, as a 1.2 reader meets a 1.3 file's server_error.
  capnp::MallocMessageBuilder header_message, exchange_message;
  auto header = header_message.initRoot<wire::Record>().initHeader();
  header.setFormatMajor(kFormatMajor);
  header.setFormatMinor(2);
  auto exchange = exchange_message.initRoot<wire::Record>().initExchange();
  exchange.setId(7);
  exchange.initError().setKind(static_cast<wire::ErrorKind>(kErrorKindCount));
  write_file(dir / "old.rtrace", zstd_frame(framed(header_message) + framed(exchange_message)));
  LoadedTrace old = load_trace(dir / "old.rtrace");
  CHECK(old.header.format_minor == 2);
  REQUIRE(old.exchanges.size() == 1);
  CHECK(old.exchanges[0].error.kind == ErrorKind::protocol);
}

TEST_CASE("a trace of a newer major version is refused with both versions named") {
  TempDir dir;
  capnp::MallocMessageBuilder message;
  auto header = message.initRoot<wire::Record>().initHeader();
  header.setFormatMajor(kFormatMajor + 1);
  header.setFormatMinor(4);
  write_file(dir / "new.rtrace", zstd_frame(framed(message)));
  try {
    TraceReader reader(dir / "new.rtrace");
    FAIL("a newer major version was accepted");
  } catch (const TraceError& e) {
    std::string what = e.what();
    CHECK(what.find(std::to_string(kFormatMajor + 1) + ".4") != std::string::npos);
    CHECK(what.find(std::to_string(kFormatMajor) + "." + std::to_string(kFormatMinor)) !=
          std::string::npos);
  }
}

TEST_CASE("a file that is not a trace is described with what to try") {
  TempDir dir;
  write_file(dir / "data.jsonl", "{\"prompt\": \"hi\"}\n");
  try {
    TraceReader reader(dir / "data.jsonl");
    FAIL("a JSONL file was accepted");
  } catch (const TraceError& e) {
    CHECK_THAT(e.what(), Catch::Contains("JSON") && Catch::Contains("retrace import"));
  }
  write_file(dir / "empty.rtrace", "");
  CHECK_THROWS_WITH(TraceReader(dir / "empty.rtrace"), Catch::Contains("empty"));
  CHECK_THROWS_WITH(TraceReader(dir / "missing.rtrace"), Catch::Contains("missing.rtrace"));
}

TEST_CASE("a trace of 100000 exchanges reads back with memory bounded by a frame and not by the file") {
  TempDir dir;
  {
    TraceWriter writer(dir / "big.rtrace", full_header());
    for (std::uint64_t id = 0; id < 100'000; ++id) writer.write(small_exchange(id));
    writer.close();
    CHECK(writer.exchanges_written() == 100'000);
    CHECK(writer.bytes_written() == fs::file_size(dir / "big.rtrace"));
  }
  TraceReader reader(dir / "big.rtrace");
  Exchange exchange;
  std::uint64_t count = 0;
  bool in_order = true;
  while (reader.next(exchange)) {
    in_order = in_order && exchange.id == count && exchange.choices.size() == 1 &&
               exchange.choices[0].tokens[1].bytes == std::to_string(count);
    ++count;
  }
  CHECK(in_order);
  CHECK(count == 100'000);
  CHECK_FALSE(reader.recovery().torn);
  INFO("peak buffers " << reader.peak_buffer_bytes() << " for " << reader.decompressed_bytes()
                       << " decompressed bytes");
  CHECK(reader.peak_buffer_bytes() * 8 < reader.decompressed_bytes());
}

TEST_CASE("frames never pass what the reader accepts whatever the flush settings say") {
  // The writer's default bound is the reader's default limit.
  CHECK(WriterOptions{}.max_frame_bytes == ReaderOptions{}.traversal_limit_words * 8);
  TempDir dir;
  constexpr std::uint64_t kLimit = 4u << 20;
  std::vector<Exchange> exchanges;
  exchanges.push_back(small_exchange(0));
  for (std::uint64_t id = 1; id <= 12; ++id) {
    auto exchange = small_exchange(id);
    exchange.request.body = std::string(1u << 20, static_cast<char>('a' + id));
    exchanges.push_back(std::move(exchange));
  }
  exchanges.push_back(small_exchange(13));
  // Nothing would close a frame but the size bound: 12 MiB of bodies in frames of at most 4 MiB.
  write_trace(dir / "t.rtrace", exchanges,
              WriterOptions{.flush_every = 1'000'000, .flush_ms = -1, .max_frame_bytes = kLimit});
  TraceReader reader(dir / "t.rtrace", ReaderOptions{.traversal_limit_words = kLimit / 8});
  Exchange exchange;
  std::size_t count = 0;
  while (reader.next(exchange)) {
    REQUIRE(count < exchanges.size());
    CHECK(exchange == exchanges[count]);
    ++count;
  }
  CHECK(count == exchanges.size());
  CHECK_FALSE(reader.recovery().torn);
  REQUIRE(reader.has_index());
  CHECK(reader.index().frames.size() > 3);
}

TEST_CASE("a frame closes once it holds a few MB so that a reader holds no more than that") {
  TempDir dir;
  std::vector<Exchange> exchanges;
  for (std::uint64_t id = 0; id < 24; ++id) {
    auto exchange = small_exchange(id);
    exchange.response.body = std::string(1u << 20, static_cast<char>('a' + id));
    exchanges.push_back(std::move(exchange));
  }
  // By count and age alone all 24 MiB would be one frame.
  write_trace(dir / "t.rtrace", exchanges, WriterOptions{.flush_every = 1'000'000, .flush_ms = -1});
  TraceReader reader(dir / "t.rtrace");
  Exchange exchange;
  std::size_t count = 0;
  while (reader.next(exchange)) {
    REQUIRE(count < exchanges.size());
    CHECK(exchange == exchanges[count]);
    ++count;
  }
  CHECK(count == exchanges.size());
  REQUIRE(reader.has_index());
  CHECK(reader.index().frames.size() >= 1 + 24 / 5);  // the header's, then about 4 MiB each
  INFO("peak buffers " << reader.peak_buffer_bytes());
  CHECK(reader.peak_buffer_bytes() < (12u << 20));
}

TEST_CASE("a frame closes when its oldest exchange is flush_ms old on the writer's clock") {
  TempDir dir;
  ManualClock clock;
  TraceWriter writer(dir / "t.rtrace", TraceHeader{},
                     WriterOptions{.flush_every = 1'000'000, .flush_ms = 1000, .clock = &clock});
  writer.write(small_exchange(0));
  CHECK_FALSE(writer.flush_if_due());
  clock.advance(std::chrono::milliseconds(999));
  writer.write(small_exchange(1));  // write() checks too, and the frame is not yet due
  CHECK_FALSE(writer.flush_if_due());
  CHECK(writer.exchanges_flushed() == 0);
  clock.advance(std::chrono::milliseconds(1));
  CHECK(writer.flush_if_due());
  CHECK(writer.exchanges_flushed() == 2);
  CHECK_FALSE(writer.flush_if_due());  // nothing open now
  writer.write(small_exchange(2));      // a new frame starts its own second
  clock.advance(std::chrono::milliseconds(999));
  CHECK_FALSE(writer.flush_if_due());
  writer.close();
  CHECK(load_trace(dir / "t.rtrace").exchanges.size() == 3);
}

TEST_CASE("a new trace header is dated by the clock it is given") {
  using namespace std::chrono;
  ManualClock clock(nanoseconds(0), system_clock::time_point(seconds(1'700'000'000)));
  clock.advance(milliseconds(250));
  auto header = new_trace_header(Source::recorded, "v", "http://127.0.0.1:1", "{}", clock);
  CHECK(header.created_unix_ns == 1'700'000'000'250'000'000);
  CHECK(header.source == Source::recorded);
}

TEST_CASE("an exchange too large for one frame is kept without its bodies and says so") {
  TempDir dir;
  constexpr std::uint64_t kLimit = 1u << 20;
  auto huge = small_exchange(1);
  huge.request.body = std::string(kLimit, 'q');
  huge.response.body = std::string(kLimit, 'r');
  write_trace(dir / "t.rtrace", {small_exchange(0), huge, small_exchange(2)},
              WriterOptions{.max_frame_bytes = kLimit});
  auto trace = load_trace(dir / "t.rtrace", ReaderOptions{.traversal_limit_words = kLimit / 8});
  REQUIRE(trace.exchanges.size() == 3);
  CHECK(trace.exchanges[0] == small_exchange(0));
  CHECK(trace.exchanges[2] == small_exchange(2));
  const auto& kept = trace.exchanges[1];
  CHECK(kept.request.body.empty());
  CHECK(kept.response.body.empty());
  CHECK(kept.choices == huge.choices);
  CHECK(kept.decode_note.find("bodies (2097152 bytes) not kept") != std::string::npos);
}

TEST_CASE("the index lists every frame and the key of every exchange") {
  TempDir dir;
  std::vector<Exchange> exchanges;
  for (std::uint64_t id = 0; id < 10; ++id) exchanges.push_back(full_exchange(id));
  write_trace(dir / "t.rtrace", exchanges, WriterOptions{.flush_every = 4});
  std::string bytes = read_file(dir / "t.rtrace");
  TraceReader reader(dir / "t.rtrace");
  Exchange exchange;
  while (reader.next(exchange)) {
  }
  REQUIRE(reader.has_index());
  const TraceIndex& index = reader.index();
  REQUIRE(index.frames.size() == 4);  // header, 4, 4, 2
  std::vector<std::uint32_t> records;
  std::uint64_t next_record = 0;
  for (const auto& frame : index.frames) {
    REQUIRE(frame.offset + 4 <= bytes.size());
    std::uint32_t magic;
    std::memcpy(&magic, bytes.data() + frame.offset, 4);
    CHECK(magic == 0xFD2FB528);
    CHECK(frame.first_record == next_record);
    next_record += frame.records;
    records.push_back(frame.records);
  }
  CHECK(records == std::vector<std::uint32_t>{1, 4, 4, 2});
  REQUIRE(index.keys.size() == exchanges.size());
  for (std::size_t i = 0; i < exchanges.size(); ++i) {
    CHECK(index.keys[i].exchange_id == exchanges[i].id);
    CHECK(index.keys[i].key == exchanges[i].key);
    CHECK(index.keys[i].frame == 1 + i / 4);
  }
}

TEST_CASE("a trace file gets mode 0600 even when it replaces a wider file") {
  TempDir dir;
  write_file(dir / "t.rtrace", "old");
  ::chmod((dir / "t.rtrace").c_str(), 0644);
  write_trace(dir / "t.rtrace", {small_exchange(1)});
  struct stat status {};
  REQUIRE(::stat((dir / "t.rtrace").c_str(), &status) == 0);
  CHECK((status.st_mode & 0777) == 0600);
  write_trace(dir / "new.rtrace", {});
  REQUIRE(::stat((dir / "new.rtrace").c_str(), &status) == 0);
  CHECK((status.st_mode & 0777) == 0600);
}

TEST_CASE("an unwritable destination fails in the constructor and names the file") {
  CHECK_THROWS_WITH(TraceWriter("/nonexistent-dir/t.rtrace", full_header()),
                    Catch::Contains("/nonexistent-dir/t.rtrace"));
  if (fs::exists("/dev/full")) {
    CHECK_THROWS_WITH(TraceWriter("/dev/full", full_header()),
                      Catch::Contains("/dev/full") && Catch::Contains("offset 0") &&
                          Catch::Contains("space"));
  }
}

TEST_CASE("request keys ignore JSON key order and whitespace but see the method and path and body") {
  RequestKey key = request_key("POST", "/v1/chat/completions",
                               R"({"model":"m","messages":[{"role":"user","content":"hi"}],"n":1})");
  CHECK(key == request_key("POST", "/v1/chat/completions",
                           "{ \"n\" : 1,\n \"messages\": [ {\"content\":\"hi\", \"role\":\"user\"} ],"
                           " \"model\": \"m\" }"));
  CHECK(key != request_key("GET", "/v1/chat/completions",
                           R"({"model":"m","messages":[{"role":"user","content":"hi"}],"n":1})"));
  CHECK(key != request_key("POST", "/v1/completions",
                           R"({"model":"m","messages":[{"role":"user","content":"hi"}],"n":1})"));
  CHECK(key != request_key("POST", "/v1/chat/completions",
                           R"({"model":"m","messages":[{"role":"user","content":"hi!"}],"n":1})"));
  // Array order is meaning, not formatting.
  CHECK(request_key("POST", "/", "[1,2]") != request_key("POST", "/", "[2,1]"));
  // Not JSON: hashed as bytes.
  CHECK(request_key("POST", "/", "a b") != request_key("POST", "/", "a  b"));
  CHECK(key.hex().size() == 32);
  CHECK(key.hex().find_first_not_of("0123456789abcdef") == std::string::npos);
  CHECK(RequestKey{0x0123456789abcdefull, 0xfedcba9876543210ull}.hex() ==
        "0123456789abcdeffedcba9876543210");
}

TEST_CASE("request keys keep their golden values") {
  // Computed once with the request_key of format 1.0. Every trace on disk stores keys computed
  // this way and diff aligns runs by them: if one of these changes, every existing trace's
  // alignment breaks. Do not update the values; keep the hash.
  CHECK(request_key("POST", "/v1/chat/completions",
                    R"({"model":"m","messages":[{"role":"user","content":"hi"}],"temperature":0})")
            .hex() == "2ae6e9836a9984843ac0367e2b0d6f64");
  CHECK(request_key("POST", "/v1/chat/completions",
                    R"({ "temperature": 0, "messages": [ {"content": "hi", "role": "user"} ], "model": "m" })")
            .hex() == "2ae6e9836a9984843ac0367e2b0d6f64");
  CHECK(request_key("POST", "/v1/completions", "not json {").hex() ==
        "9dee4e388156d76a056e19aeef8ee083");
  CHECK(request_key("GET", "/v1/models", "").hex() == "6078d6f9aab7b6a61aa605231a5f25df");
}

TEST_CASE("the shipped gold-intents trace still reads with its keys and fields") {
  // traces/gold-intents.rtrace was written by an earlier retrace: an old trace file keeps reading.
  LoadedTrace loaded = load_trace(fs::path(RETRACE_SOURCE_ROOT) / "traces" / "gold-intents.rtrace");
  CHECK_FALSE(loaded.recovery.torn);
  CHECK(loaded.header.source == Source::imported);
  REQUIRE(loaded.exchanges.size() == 20);
  const Exchange& first = loaded.exchanges.front();
  REQUIRE(first.label("id") != nullptr);
  CHECK(*first.label("id") == "gold-01");
  CHECK(first.expected == std::optional<std::string>("billing"));
  CHECK(first.request.body.find("charged twice") != std::string::npos);
  CHECK(*loaded.exchanges.back().label("id") == "gold-20");
  // The keys stored when it was written are the keys computed today.
  for (const auto& exchange : loaded.exchanges)
    CHECK(exchange.key == request_key(exchange.request.method, exchange.request.target,
                                      exchange.request.body));
}

TEST_CASE("enum names parse back and unknown names are refused") {
  for (auto kind : {TokenKind::none, TokenKind::text_deltas, TokenKind::logprob_tokens,
                    TokenKind::token_ids})
    CHECK(token_kind_from_string(to_string(kind)) == kind);
  for (std::size_t k = 0; k < kErrorKindCount; ++k) {
    auto kind = static_cast<ErrorKind>(k);
    CHECK(error_kind_from_string(to_string(kind)) == kind);
  }
  for (auto source : {Source::recorded, Source::replayed, Source::imported})
    CHECK(source_from_string(to_string(source)) == source);
  CHECK_FALSE(error_kind_from_string("nope"));
  CHECK_FALSE(token_kind_from_string(""));
}

TEST_CASE("import builds chat and completions requests with ids and expected answers and keys") {
  TempDir dir;
  write_file(dir / "in.jsonl",
             "{\"id\": \"q1\", \"prompt\": \"What is 2+2?\", \"expected\": \"4\"}\n"
             "\n"
             "{\"id\": 7, \"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], "
             "\"temperature\": 0.5, \"max_tokens\": 8}\n"
             "{\"request\": {\"model\": \"x\", \"prompt\": \"p\"}}\n");
  ImportOptions options;
  options.model = "m1";
  options.max_tokens = 32;
  CHECK(import_dataset(dir / "in.jsonl", dir / "out.rtrace", options) == 3);
  CHECK_FALSE(fs::exists(dir / "out.rtrace.tmp"));
  LoadedTrace loaded = load_trace(dir / "out.rtrace");
  CHECK(loaded.header.source == Source::imported);
  CHECK(loaded.header.target == (dir / "in.jsonl").string());
  CHECK_THAT(loaded.header.settings, Catch::Contains("\"max_tokens\":32"));
  REQUIRE(loaded.exchanges.size() == 3);
  const Exchange& first = loaded.exchanges[0];
  CHECK(first.id == 1);
  CHECK(first.request.method == "POST");
  CHECK(first.request.target == "/v1/chat/completions");
  auto body = boost::json::parse(first.request.body).as_object();
  CHECK(body.at("model") == "m1");
  CHECK(body.at("temperature") == 0);
  CHECK(body.at("max_tokens") == 32);
  CHECK(body.at("messages").as_array()[0].as_object().at("content") == "What is 2+2?");
  CHECK(first.expected == std::optional<std::string>("4"));
  REQUIRE(first.label("id"));
  CHECK(*first.label("id") == "q1");
  CHECK(first.key == request_key(first.request.method, first.request.target, first.request.body));

  auto second = boost::json::parse(loaded.exchanges[1].request.body).as_object();
  CHECK(second.at("temperature") == 0.5);
  CHECK(second.at("max_tokens") == 8);
  CHECK(*loaded.exchanges[1].label("id") == "7");
  CHECK_FALSE(loaded.exchanges[1].expected);

  CHECK(loaded.exchanges[2].request.target == "/v1/completions");
  CHECK(boost::json::parse(loaded.exchanges[2].request.body).as_object().at("model") == "x");

  write_file(dir / "batch.jsonl",
             "{\"custom_id\": \"r-1\", \"method\": \"POST\", \"url\": \"/v1/chat/completions\", "
             "\"body\": {\"model\": \"gpt\", \"messages\": [{\"role\": \"user\", \"content\": \"x\"}]}}\n");
  options.from = "openai-batch";
  CHECK(import_dataset(dir / "batch.jsonl", dir / "batch.rtrace", options) == 1);
  LoadedTrace batch = load_trace(dir / "batch.rtrace");
  REQUIRE(batch.exchanges.size() == 1);
  CHECK(*batch.exchanges[0].label("id") == "r-1");
  CHECK(boost::json::parse(batch.exchanges[0].request.body).as_object().at("model") == "gpt");
}

TEST_CASE("import keeps max_completion_tokens and adds no max_tokens beside it") {
  TempDir dir;
  write_file(dir / "in.jsonl",
             "{\"request\": {\"messages\": [{\"role\": \"user\", \"content\": \"a\"}], \"max_completion_tokens\": 64}}\n"
             "{\"messages\": [{\"role\": \"user\", \"content\": \"b\"}], \"max_completion_tokens\": 12}\n"
             "{\"messages\": [{\"role\": \"user\", \"content\": \"c\"}]}\n");
  ImportOptions options;
  options.max_tokens = 128;
  REQUIRE(import_dataset(dir / "in.jsonl", dir / "out.rtrace", options) == 3);
  LoadedTrace loaded = load_trace(dir / "out.rtrace");
  auto whole = boost::json::parse(loaded.exchanges[0].request.body).as_object();
  CHECK(whole.at("max_completion_tokens") == 64);
  CHECK_FALSE(whole.contains("max_tokens"));
  auto messages = boost::json::parse(loaded.exchanges[1].request.body).as_object();
  CHECK(messages.at("max_completion_tokens") == 12);
  CHECK_FALSE(messages.contains("max_tokens"));
  auto plain = boost::json::parse(loaded.exchanges[2].request.body).as_object();
  CHECK(plain.at("max_tokens") == 128);
  CHECK_FALSE(plain.contains("max_completion_tokens"));
  write_file(dir / "bad.jsonl", "{\"messages\": [{\"role\": \"user\", \"content\": \"b\"}], \"max_completion_tokens\": 0}\n");
  CHECK_THROWS_WITH(import_dataset(dir / "bad.jsonl", dir / "bad.rtrace", options),
                    Catch::Contains("\"max_completion_tokens\" must be a whole number above 0"));
}

TEST_CASE("a dataset line with a lone surrogate escape is imported with U+FFFD and counted") {
  TempDir dir;
  write_file(dir / "in.jsonl",
             "{\"prompt\": \"scraped \\ud83d text\"}\n"
             "{\"prompt\": \"fine \\ud83d\\ude00\"}\n"
             "{\"messages\": [{\"role\": \"user\", \"content\": \"\\udc00\\udc00\"}]}\n");
  ImportNotes notes;
  CHECK(import_dataset(dir / "in.jsonl", dir / "out.rtrace", ImportOptions{}, &notes) == 3);
  CHECK(notes.lone_surrogates == 3);
  auto loaded = load_trace(dir / "out.rtrace");
  REQUIRE(loaded.exchanges.size() == 3);
  CHECK(loaded.exchanges[0].request.body.find("scraped \xEF\xBF\xBD text") != std::string::npos);
  CHECK(loaded.exchanges[1].request.body.find("fine \xF0\x9F\x98\x80") != std::string::npos);
}

TEST_CASE("a bad import line is named by its line number and leaves no output file") {
  TempDir dir;
  const std::string good = "{\"prompt\": \"a\"}\n";
  struct Case {
    std::string third_line;
    std::string says;
  };
  for (const auto& [third_line, says] : std::vector<Case>{
           {"{\"prompt\": \"a\"\n", "not valid JSON"},
           {"[1, 2]\n", "expected a JSON object"},
           {"{\"id\": 3}\n", "\"prompt\", \"messages\" or \"request\""},
           {"{\"prompt\": 5}\n", "\"prompt\" must be a string"},
           {"{\"messages\": []}\n", "\"messages\" must be a non-empty array"},
           {"{\"custom_id\": \"x\", \"body\": {}}\n", "--from openai-batch"},
           {"{\"prompt\": \"a\", \"max_tokens\": \"abc\"}\n", "\"max_tokens\" must be a whole number above 0"},
           {"{\"prompt\": \"a\", \"max_tokens\": -1}\n", "\"max_tokens\" must be a whole number above 0"},
           {"{\"prompt\": \"a\", \"max_tokens\": 1e30}\n", "\"max_tokens\" must be a whole number above 0"},
           {"{\"prompt\": \"a\", \"temperature\": \"hot\"}\n", "\"temperature\" must be a number"},
           {"{\"prompt\": \"a\", \"model\": 5}\n", "\"model\" must be a string"},
           {"{\"request\": {\"prompt\": \"a\", \"top_p\": 1e400}}\n", "the line.request.top_p is a number out of range"}}) {
    INFO(third_line);
    fs::path in = dir / "bad.jsonl";
    write_file(in, good + good + third_line + good);
    try {
      import_dataset(in, dir / "out.rtrace", ImportOptions{});
      FAIL("the bad line was accepted");
    } catch (const TraceError& e) {
      CHECK_THAT(e.what(), Catch::StartsWith(in.string() + ":3: ") && Catch::Contains(says));
    }
    CHECK_FALSE(fs::exists(dir / "out.rtrace"));
    CHECK_FALSE(fs::exists(dir / "out.rtrace.tmp"));
  }
}

TEST_CASE("an OpenAI Batch line cannot put a second line or header on the wire") {
  TempDir dir;
  for (const auto& [line, says] : std::vector<std::pair<std::string, std::string>>{
           {R"({"custom_id": "a", "url": "/v1/chat/completions\r\nHost: evil", "body": {"messages": [{"role": "user", "content": "x"}]}})",
            "\"url\" must be a path without spaces or control characters"},
           {R"({"custom_id": "a", "url": "/v1/x y", "body": {}})",
            "\"url\" must be a path without spaces or control characters"},
           {R"({"custom_id": "a", "method": "POST /evil HTTP/1.1\r\nX: y", "url": "/v1/completions", "body": {}})",
            "\"method\" must be an HTTP method"}}) {
    INFO(line);
    write_file(dir / "batch.jsonl", line + "\n");
    ImportOptions options;
    options.from = "openai-batch";
    CHECK_THROWS_WITH(import_dataset(dir / "batch.jsonl", dir / "out.rtrace", options),
                      Catch::StartsWith((dir / "batch.jsonl").string() + ":1: ") &&
                          Catch::Contains(says));
    CHECK_FALSE(fs::exists(dir / "out.rtrace"));
  }
}

TEST_CASE("import refuses to write over its input or over a temporary file it did not make") {
  TempDir dir;
  const std::string dataset = "{\"prompt\": \"a\"}\n";
  write_file(dir / "in.jsonl", dataset);
  CHECK_THROWS_WITH(import_dataset(dir / "in.jsonl", dir / "in.jsonl", ImportOptions{}),
                    Catch::Contains("over its own input"));
  CHECK(read_file(dir / "in.jsonl") == dataset);
  write_file(dir / "out.rtrace.tmp", "someone else's");
  CHECK_THROWS_WITH(import_dataset(dir / "in.jsonl", dir / "out.rtrace", ImportOptions{}),
                    Catch::Contains("out.rtrace.tmp already exists"));
  CHECK(read_file(dir / "out.rtrace.tmp") == "someone else's");
  CHECK_FALSE(fs::exists(dir / "out.rtrace"));
}

TEST_CASE("the request summary shows the last user message or the prompt cut to length") {
  Request chat{"POST", "/v1/chat/completions", {},
               R"({"messages":[{"role":"system","content":"s"},{"role":"user","content":"first"},)"
               R"({"role":"assistant","content":"a"},{"role":"user","content":"second"}]})"};
  CHECK(request_summary(chat) == "second");
  Request completion{"POST", "/v1/completions", {}, R"({"prompt":"abcdefghij"})"};
  CHECK(request_summary(completion, 4) == "abcd…");
  Request raw{"POST", "/x", {}, "not json"};
  CHECK(request_summary(raw) == "not json");
}
