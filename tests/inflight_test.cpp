// net/arrived_body: a response body kept as it arrived (its bytes and one mark per read) and
// decoded once after its last byte, the rule record and replay share; and the decode limit,
// which counts an event stream's bookkeeping as well as its bytes.
#include <catch2/catch.hpp>

#include <random>

#include "llm/llm.hpp"
#include "net/arrived_body.hpp"
#include "tests/encoders.hpp"

using namespace retrace;
using namespace retrace::net;
using retrace::test::gzip;

namespace {

std::string chat_event(const std::string& text) {
  return "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,"
         "\"delta\":{\"content\":\"" +
         text + "\"},\"finish_reason\":null}]}\n\n";
}

std::string chat_stream(int tokens) {
  std::string body;
  for (int i = 0; i < tokens; ++i) body += chat_event("t" + std::to_string(i) + " ");
  return body + "data: [DONE]\n\n";
}

// `body` arrived in reads cut at random places, one millisecond apart.
ArrivedBody arrived_in_pieces(const std::string& body, unsigned seed) {
  std::mt19937 rng(seed);
  ArrivedBody arrived;
  std::size_t at = 0;
  std::int64_t offset = 0;
  while (at < body.size()) {
    auto take = std::min<std::size_t>(body.size() - at, 1 + rng() % 300);
    arrived.append(std::string_view(body).substr(at, take), offset += 1'000'000);
    at += take;
  }
  return arrived;
}

struct Decoded {
  Exchange exchange;
  DecodedBody body;
};

Decoded decode(ArrivedBody arrived, std::string_view coding, std::size_t limit = kMaxDecodedBytes) {
  Decoded out;
  out.exchange.request.target = "/v1/chat/completions";
  out.exchange.request.body = R"({"model":"m","stream":true,"messages":[]})";
  out.exchange.response.status = 200;
  llm::ResponseDecoder decoder(llm::Dialect::openai_chat);
  out.body = decode_arrived(arrived, true, coding, out.exchange.response, &decoder, arrived.last_offset_ns(),
                            limit);
  decoder.finish(out.exchange);
  return out;
}

std::string joined(const Events& events) {
  std::string body;
  for (const auto& event : events) body += event.data;
  return body;
}

}  // namespace

TEST_CASE("a stream decoded after its last byte is the stream decoded as it came - however the reads cut it") {
  const auto body = chat_stream(2000);
  // The reference: one read, decoded whole.
  ArrivedBody whole;
  whole.append(body, 5);
  auto reference = decode(whole, "");
  REQUIRE(reference.exchange.choices.size() == 1);
  REQUIRE(reference.exchange.choices[0].tokens.size() == 2000);
  for (unsigned seed = 1; seed <= 20; ++seed) {
    auto pieces = decode(arrived_in_pieces(body, seed), "");
    CHECK_FALSE(pieces.body.as_received);
    CHECK(pieces.body.note.empty());
    CHECK(joined(pieces.exchange.response.events) == body);
    REQUIRE(pieces.exchange.choices.size() == 1);
    const auto& tokens = pieces.exchange.choices[0].tokens;
    REQUIRE(tokens.size() == 2000);
    for (std::size_t i = 0; i < tokens.size(); ++i)
      REQUIRE(tokens[i].bytes == reference.exchange.choices[0].tokens[i].bytes);
    // Each event keeps the arrival of the read that completed it.
    for (const auto& event : pieces.exchange.response.events) CHECK(event.offset_ns % 1'000'000 == 0);
  }
}

TEST_CASE("a gzip'd stream decodes to the events of the plain one with their reads' arrivals") {
  const auto body = chat_stream(300);
  auto coded = gzip(body);
  auto plain = decode(arrived_in_pieces(body, 3), "");
  auto zipped = decode(arrived_in_pieces(coded, 3), "gzip");
  CHECK_FALSE(zipped.body.as_received);
  CHECK(joined(zipped.exchange.response.events) == body);
  REQUIRE(zipped.exchange.choices.size() == 1);
  CHECK(llm::choice_text(zipped.exchange.choices[0]) == llm::choice_text(plain.exchange.choices[0]));
}

TEST_CASE("a cut stream keeps its unterminated tail raw as a last event at the end") {
  std::string body = chat_stream(3);
  body.resize(body.size() - 5);  // ends in "data: [DO"
  ArrivedBody arrived;
  arrived.append(body, 7);
  auto out = decode(arrived, "");
  CHECK(joined(out.exchange.response.events) == body);
  CHECK(out.exchange.response.events.back().data == "data: [DO");
}

TEST_CASE("an SSE bomb of tiny events stops at the decode limit counted with its events' bookkeeping") {
  // 3,000,000 comment events (":\n\n", 9 MB) in a gzip'd body of a few KiB; the limit is 16 MiB.
  // Counted by their bytes alone they would pass; with a position each (16 bytes), they cost 57 MB.
  std::string plain;
  for (int i = 0; i < 3'000'000; ++i) plain += ":\n\n";
  auto coded = gzip(plain);
  REQUIRE(coded.size() < 64 * 1024);
  ArrivedBody arrived;
  arrived.append(std::string_view(coded).substr(0, coded.size() / 2), 10);
  arrived.append(std::string_view(coded).substr(coded.size() / 2), 20);
  constexpr std::size_t kLimit = 16u << 20;
  auto out = decode(arrived, "gzip", kLimit);
  CHECK(out.body.as_received);
  CHECK_THAT(out.body.note, Catch::Contains("decodes to more than 16777216 bytes with its events' bookkeeping"));
  // Stored as received: one event per read, the coded bytes.
  const auto& events = out.exchange.response.events;
  REQUIRE(events.size() == 2);
  CHECK(joined(events) == coded);
  CHECK(events[1].offset_ns == 20);
  CHECK(events.memory() <= kLimit);
  // The same events fit a limit that holds them: then they are all decoded.
  auto roomy = decode(arrived, "gzip", 512u << 20);
  CHECK_FALSE(roomy.body.as_received);
  CHECK(roomy.exchange.response.events.size() == 3'000'000);
}

TEST_CASE("a coded stream that decodes to more than half the decode limit is decoded whole") {
  // 10 MB of events in a gzip'd body under a 16 MiB limit: the events' one buffer, doubling as it
  // grows, would pass the limit at 8 MiB; it is grown to the limit exactly instead, once.
  std::string plain = chat_stream(80'000);
  REQUIRE(plain.size() > 9'000'000);
  ArrivedBody arrived;
  arrived.append(gzip(plain), 10);
  constexpr std::size_t kLimit = 16u << 20;
  auto out = decode(arrived, "gzip", kLimit);
  CHECK_FALSE(out.body.as_received);
  CHECK(joined(out.exchange.response.events) == plain);
  CHECK(out.exchange.response.events.size() == 80'001);
  CHECK(out.exchange.response.events.memory() <= kLimit);
}

TEST_CASE("a body that is not a stream is taken as it is - or decoded - and left to the caller's decoder") {
  auto one_read = [](std::string_view bytes) {
    ArrivedBody arrived;
    arrived.append(bytes, 5);
    return arrived;
  };
  Response response;
  auto body = one_read(R"({"choices":[]})");
  auto plain = decode_arrived(body, false, "", response, nullptr, 5);
  CHECK_FALSE(plain.as_received);
  CHECK(response.body == R"({"choices":[]})");
  CHECK_FALSE(response.streamed);

  Response coded_response;
  auto coded = one_read(gzip(R"({"choices":[1]})"));
  decode_arrived(coded, false, "gzip", coded_response, nullptr, 5);
  CHECK(coded_response.body == R"({"choices":[1]})");

  Response corrupt_response;
  auto corrupt = one_read("not gzip at all");
  auto corrupt_out = decode_arrived(corrupt, false, "gzip", corrupt_response, nullptr, 5);
  CHECK(corrupt_out.as_received);
  CHECK(corrupt_response.body == "not gzip at all");
  CHECK_THAT(corrupt_out.note, Catch::Contains("Content-Encoding gzip"));
}

TEST_CASE("a stream reserves the marks the worker's last one took plus an eighth - at most a MiB") {
  ArrivedBody small;
  small.reserve_like({80'000, 800, 4'000});
  CHECK(small.held_bytes() >= 4'400 + ArrivedBody::kBlockBytes);
  CHECK(small.held_bytes() < 2 * ArrivedBody::kBlockBytes);
  ArrivedBody big;
  big.reserve_like({100'000'000, 10'000'000, 50'000'000});
  CHECK(big.held_bytes() < (3u << 20));
}

TEST_CASE("a stream under a block reserves the raw bytes the worker's last one took plus an eighth") {
  ArrivedBody body;
  body.reserve_like({48'000, 16, 64});
  auto reserved = body.held_bytes();
  CHECK(reserved >= 54'000);
  CHECK(reserved < ArrivedBody::kBlockBytes + 1'024);
  // Filling it to the last stream's size takes no more room: its bytes are not copied on the way.
  std::string event(3'000, 'e');
  for (int i = 0; i < 16; ++i) body.append(event, i);
  CHECK(body.held_bytes() == reserved);
}
