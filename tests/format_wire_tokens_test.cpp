// format/wire_tokens.cpp: a choice's tokens and alternatives written as words in one pass are
// byte for byte what Cap'n Proto's generated setters make of them, field by field (the writer
// before it), at production size (16,384 tokens with 5 alternatives) and at the edges (empty
// bytes, 1 to 9 bytes, other bytes past a string's size, no logprob, no id, 20 alternatives, a
// 100 KB token, -0 and NaN logprobs); and where the
// words cannot go in one block after the list (the message's segment ends), the setters write
// them and they read back the same.
#include <capnp/message.h>
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "format/wire.hpp"

using namespace retrace;

namespace {

// The generated setters, field by field, as fill_exchange wrote tokens before fill_tokens.
void fill_tokens_by_setters(wire::Choice::Builder out, const Choice& choice) {
  detail::fill_tokens_by_setters(out.initTokens(static_cast<unsigned>(choice.tokens.size())), choice);
}

// The message's one segment after `fill` wrote a Choice (its index set first, as fill_exchange
// sets fields before the tokens), over a zeroed first segment it fits.
template <class Fill>
std::string words(const Choice& choice, Fill&& fill) {
  std::vector<capnp::word> scratch(2u << 20);  // 16 MiB, zeroed
  capnp::MallocMessageBuilder builder(kj::arrayPtr(scratch.data(), scratch.size()));
  auto out = builder.initRoot<wire::Choice>();
  out.setIndex(choice.index);
  fill(out, choice);
  auto segments = builder.getSegmentsForOutput();
  REQUIRE(segments.size() == 1);
  return std::string(reinterpret_cast<const char*>(segments[0].begin()), segments[0].size() * sizeof(capnp::word));
}

void require_same_words(const Choice& choice) {
  const std::string bulk = words(choice, detail::fill_tokens);
  const std::string setters = words(choice, fill_tokens_by_setters);
  REQUIRE(bulk.size() == setters.size());
  const bool same = bulk == setters;  // not printed whole: up to MBs
  CHECK(same);
}

// What a reader gets of the tokens in `in`, compared with `choice`'s (bit for bit, NaN too).
void require_reads_back(wire::Choice::Reader in, const Choice& choice) {
  auto tokens = in.getTokens();
  REQUIRE(tokens.size() == choice.tokens.size());
  for (unsigned t = 0; t < tokens.size(); ++t) {
    const Token& token = choice.tokens[t];
    auto read = tokens[t];
    CHECK(read.getId() == token.id);
    auto bytes = read.getBytes();
    CHECK(std::string(reinterpret_cast<const char*>(bytes.begin()), bytes.size()) == token.bytes);
    CHECK(read.getHasLogprob() == token.has_logprob);
    const float token_logprob = read.getLogprob();
    CHECK(std::memcmp(&token_logprob, &token.logprob, sizeof(float)) == 0);
    CHECK(read.getOffsetNs() == token.offset_ns);
    const auto top = choice.top(token);
    auto top_read = read.getTop();
    REQUIRE(top_read.size() == top.size());
    for (unsigned a = 0; a < top.size(); ++a) {
      CHECK(top_read[a].getId() == top[a].id);
      auto alternative_bytes = top_read[a].getBytes();
      CHECK(std::string(reinterpret_cast<const char*>(alternative_bytes.begin()), alternative_bytes.size()) ==
            top[a].bytes);
      const float logprob = top_read[a].getLogprob();
      CHECK(std::memcmp(&logprob, &top[a].logprob, sizeof(float)) == 0);
    }
  }
}

// A streamed answer: `tokens` tokens of a few bytes, each with `alternatives` alternatives.
Choice answer(std::size_t tokens, int alternatives) {
  Choice choice;
  choice.index = 3;
  for (std::size_t t = 0; t < tokens; ++t) {
    Token token;
    token.id = static_cast<std::int32_t>((t * 31) % 50'000);
    token.bytes = " w" + std::to_string((t * 2654435761u) % 50'000);
    token.has_logprob = true;
    token.logprob = -static_cast<float>(t % 997) / 1000.0f;
    token.offset_ns = static_cast<std::int64_t>(t) * 11'000;
    std::vector<Alternative> top;
    for (int a = 0; a < alternatives; ++a)
      top.push_back({static_cast<std::int32_t>((t * 17 + static_cast<std::size_t>(a)) % 50'000),
                     " a" + std::to_string(t + static_cast<std::size_t>(a)), token.logprob - 0.25f * static_cast<float>(a)});
    choice.add_token(token, top);
  }
  return choice;
}

// Every edge a token or an alternative has, one token each.
Choice edges() {
  Choice choice;
  auto add = [&](Token token, std::vector<Alternative> top) { choice.add_token(token, top); };
  add(Token{.id = 7, .bytes = "", .has_logprob = true, .logprob = -1.5f}, {});  // empty bytes
  add(Token{.id = -1, .bytes = "no id, no logprob", .offset_ns = -3}, {});
  add(Token{.id = 8, .bytes = "12345678"}, {{1, "", -0.5f}, {-1, "x", 0.0f}});  // one word; an empty alternative
  add(Token{.id = 9, .bytes = "123456789", .has_logprob = true, .logprob = -0.0f}, {});  // two words, -0
  add(Token{.id = 10, .bytes = "nan", .has_logprob = true, .logprob = std::numeric_limits<float>::quiet_NaN()},
      {{2, "inf", -std::numeric_limits<float>::infinity()}});
  std::vector<Alternative> twenty;
  for (int a = 0; a < 20; ++a) twenty.push_back({a, std::string(static_cast<std::size_t>(a), 'a'), -0.1f * static_cast<float>(a)});
  add(Token{.id = 11, .bytes = "twenty", .has_logprob = true, .logprob = -0.01f}, twenty);
  add(Token{.id = 12, .bytes = std::string(100 * 1024, 'k'), .offset_ns = 1}, {{3, std::string(100 * 1024 + 3, 'z'), -9.0f}});
  add(Token{.id = std::numeric_limits<std::int32_t>::max(), .bytes = std::string("\0\xff\n", 3), .offset_ns = std::numeric_limits<std::int64_t>::min()},
      {{std::numeric_limits<std::int32_t>::min(), "\xf0\x9f", 1.0f}});
  // Strings whose buffers hold other bytes past their size (shrunk: on the heap, and in place).
  add(Token{.id = 14, .bytes = "s"}, {{5, "t", -2.0f}});
  choice.tokens.back().bytes.assign(40, 'g');
  choice.tokens.back().bytes.resize(5);
  choice.alternatives.back().bytes.assign(15, 'h');
  choice.alternatives.back().bytes.resize(2);
  return choice;
}

}  // namespace

TEST_CASE("a streamed answer's tokens in one pass are the setters' words for 16384 tokens with 5 alternatives") {
  require_same_words(answer(16'384, 5));
  require_same_words(answer(256, 2));
  require_same_words(answer(300, 0));
}

TEST_CASE("tokens at every edge in one pass are the setters' words and read back the same") {
  const Choice choice = edges();
  require_same_words(choice);
  require_same_words(Choice{});  // no token: the list alone
  Choice empty;  // tokens with no bytes and no alternatives: nothing after the list
  for (int t = 0; t < 3; ++t) empty.add_token(Token{.id = t, .bytes = "", .has_logprob = t == 1, .logprob = -0.5f}, {});
  require_same_words(empty);
  std::vector<capnp::word> scratch(1u << 16);
  capnp::MallocMessageBuilder builder(kj::arrayPtr(scratch.data(), scratch.size()));
  detail::fill_tokens(builder.initRoot<wire::Choice>(), choice);
  require_reads_back(builder.getRoot<wire::Choice>().asReader(), choice);
}

TEST_CASE("tokens whose words do not fit after their list in its segment are written by the setters and read back the same") {
  const Choice choice = answer(64, 2);
  // Room for the root pointer, the Choice and the tokens list, not for what follows it: the rest
  // goes to a segment of its own, reached through far pointers.
  const unsigned first = 1 + wire::Choice::_capnpPrivate::dataWordSize + wire::Choice::_capnpPrivate::pointerCount +
                         1 + 5 * 64 + 2;
  std::vector<capnp::word> scratch(first);
  capnp::MallocMessageBuilder builder(kj::arrayPtr(scratch.data(), scratch.size()));
  detail::fill_tokens(builder.initRoot<wire::Choice>(), choice);
  REQUIRE(builder.getSegmentsForOutput().size() > 1);
  require_reads_back(builder.getRoot<wire::Choice>().asReader(), choice);
}
