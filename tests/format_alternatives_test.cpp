// A choice's alternatives kept in one vector a choice (Choice::alternatives, each token holding
// where its own are): streams of growing size decoded from their events as record and replay
// decode them, copied, moved, assigned over exchanges of other sizes, written and read back into
// one reused exchange, every token's every alternative checked at each step.
#include <catch2/catch.hpp>

#include <string>
#include <utility>
#include <vector>

#include "format/trace.hpp"
#include "llm/llm.hpp"
#include "tests/temp_dir.hpp"

using namespace retrace;

namespace {

constexpr int kExchanges = 160;

// Exchange i: tokens of growing count (up to 2,926), bytes and alternatives of growing length,
// 0 to 5 alternatives a token (none for some, in the middle of a stream).
std::size_t token_count(int i) { return 1 + static_cast<std::size_t>(i % 40) * 75; }
std::size_t alternative_count(int i, std::size_t t) { return (static_cast<std::size_t>(i) + t) % 6; }
std::string token_text(int i, std::size_t t) { return "t" + std::to_string(t) + std::string(i % 23, 'x'); }
std::string alternative_text(int i, std::size_t t, std::size_t a) {
  return "a" + std::to_string(a) + "_" + std::to_string(t) + std::string((i + a) % 17, 'y');
}
float alternative_logprob(std::size_t a) { return -0.5f * static_cast<float>(a + 1); }

// A legacy completions stream, one token an event, its alternatives sent worst first (so the
// decoder's best-first sort moves them), then usage-free [DONE].
Exchange streamed(int i) {
  Exchange exchange;
  exchange.id = static_cast<std::uint64_t>(i);
  exchange.request.method = "POST";
  exchange.request.target = "/v1/completions";
  exchange.request.body = R"({"model":"m","prompt":"p","stream":true,"logprobs":5})";
  exchange.response.status = 200;
  exchange.response.streamed = true;
  const std::size_t tokens = token_count(i);
  for (std::size_t t = 0; t < tokens; ++t) {
    std::string top;
    for (std::size_t a = alternative_count(i, t); a-- > 0;) {
      if (!top.empty()) top += ',';
      top += "\"" + alternative_text(i, t, a) + "\":" + std::to_string(alternative_logprob(a));
    }
    const std::string text = token_text(i, t);
    std::string data = R"({"choices":[{"index":0,"text":")" + text + R"(","logprobs":{"tokens":[")" + text +
                       R"("],"token_logprobs":[-0.25],"top_logprobs":[)" +
                       (top.empty() ? std::string("null") : "{" + top + "}") + "]}";
    data += t + 1 == tokens ? R"(,"finish_reason":"length"}]})" : R"(,"finish_reason":null}]})";
    exchange.response.events.push_back({static_cast<std::int64_t>(1000 * (t + 1)), "data: " + data + "\n\n"});
  }
  exchange.response.events.push_back({static_cast<std::int64_t>(1000 * (tokens + 1)), "data: [DONE]\n\n"});
  llm::decode_exchange(exchange);
  return exchange;
}

// Every token and alternative of exchange i, and its events, as streamed() made them.
void check(const Exchange& exchange, int i) {
  INFO("exchange " << i);
  REQUIRE(exchange.choices.size() == 1);
  const Choice& choice = exchange.choices[0];
  const std::size_t tokens = token_count(i);
  REQUIRE(choice.tokens.size() == tokens);
  std::size_t alternatives = 0;
  for (std::size_t t = 0; t < tokens; ++t) {
    const Token& token = choice.tokens[t];
    REQUIRE(token.bytes == token_text(i, t));
    const auto top = choice.top(token);
    REQUIRE(top.size() == alternative_count(i, t));
    for (std::size_t a = 0; a < top.size(); ++a) {  // best first: a0 first
      REQUIRE(top[a].bytes == alternative_text(i, t, a));
      REQUIRE(top[a].logprob == alternative_logprob(a));
    }
    alternatives += top.size();
  }
  REQUIRE(choice.alternatives.size() == alternatives);  // no orphans: one vector, exactly theirs
  REQUIRE(exchange.response.events.size() == tokens + 1);
  REQUIRE(exchange.response.events.back().data == "data: [DONE]\n\n");
}

}  // namespace

TEST_CASE("Alternatives of thousands of tokens survive copies moves and assignments over other sizes") {
  Exchange previous = streamed(0);
  for (int i = 0; i < kExchanges; ++i) {
    Exchange decoded = streamed(i);
    check(decoded, i);
    Exchange copy = decoded;
    check(copy, i);
    Exchange moved = std::move(copy);
    check(moved, i);
    previous = decoded;  // assigned over an exchange of another size, reusing its storage
    check(previous, i);
    Choice part = std::move(moved.choices[0]);  // a choice alone keeps its tokens' alternatives
    moved.choices[0] = std::move(part);
    check(moved, i);
    REQUIRE(moved == decoded);
  }
}

TEST_CASE("Alternatives read back into one reused exchange match the ones written at every size") {
  TempDir dir;
  const auto path = dir / "alternatives.rtrace";
  {
    TraceWriter writer(path, TraceHeader{});
    for (int i = 0; i < kExchanges; ++i) writer.write(streamed(i));
    writer.close();
  }
  TraceReader reader(path);
  Exchange read;  // reused: its choices' alternatives grow and shrink with each record
  int i = 0;
  for (; reader.next(read); ++i) {
    check(read, i);
    Exchange expected = streamed(i);
    expected.id = read.id;
    REQUIRE(read.choices == expected.choices);
  }
  CHECK(i == kExchanges);
  CHECK(reader.recovery().clean());
}

TEST_CASE("Tokens without alternatives compare equal wherever their top_begin points") {
  // A token with no alternatives keeps the alternatives' size when it was added as its top_begin
  // (the decoder, the readers, add_token); two equal choices built in different ways must compare
  // equal, and tokens whose alternatives differ must not.
  Choice built, read;
  Token plain;
  plain.bytes = "a";
  Token& with_top = built.add_token(plain, {});
  Alternative alt;
  alt.bytes = "b";
  built.add_alternative(with_top) = alt;
  built.add_token(plain, {});  // top_begin 1
  read.add_token(plain, {}).top_begin = 0;
  read.add_alternative(read.tokens.back()) = alt;
  read.tokens.push_back(plain);  // top_begin 0, as a default-made token
  CHECK(built.tokens[1].top_begin != read.tokens[1].top_begin);
  CHECK(built == read);
  read.tokens[1].top_count = 1;  // now it claims an alternative the other has not
  CHECK_FALSE(built == read);
  Choice other = built;
  other.alternatives[0].bytes = "c";
  CHECK_FALSE(built == other);
}
