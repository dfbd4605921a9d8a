// diff/'s two additions for the Python module's tables: identical pairs kept on request
// (Options::keep_identical, every pair a row) and a token's margin to its next alternative.
#include <catch2/catch.hpp>

#include "diff/diff.hpp"

using namespace retrace;
using namespace retrace::diff;

namespace {

Exchange answer(std::uint64_t id, std::vector<std::string> deltas) {
  Exchange exchange;
  exchange.id = id;
  exchange.key = RequestKey{id, id * 7};
  Choice choice;
  choice.kind = TokenKind::text_deltas;
  for (auto& delta : deltas) {
    Token token;
    token.bytes = std::move(delta);
    choice.tokens.push_back(std::move(token));
  }
  choice.finish_reason = "stop";
  exchange.choices.push_back(std::move(choice));
  return exchange;
}

// A choice of one token with these alternatives.
Choice token_with(std::int32_t id, std::string bytes, std::optional<float> logprob, std::vector<Alternative> top) {
  Choice choice;
  Token& token = choice.tokens.emplace_back();
  token.id = id;
  token.bytes = std::move(bytes);
  if (logprob) token.has_logprob = true, token.logprob = *logprob;
  for (Alternative& alternative : top) choice.add_alternative(token) = std::move(alternative);
  return choice;
}
std::optional<double> margin_to_next(const Choice& choice) {
  return retrace::diff::margin_to_next(choice, choice.tokens.front());
}

}  // namespace

TEST_CASE("With keep_identical every aligned pair is a row and the counts do not change") {
  std::vector<Exchange> baseline, candidate;
  for (std::uint64_t i = 0; i < 5; ++i) baseline.push_back(answer(i, {"hello", " world"}));
  candidate = baseline;
  candidate[1] = answer(1, {"hel", "lo world"});  // the same text chunked differently: identical
  candidate[3] = answer(3, {"hello", " there"});
  LoadedTrace base{{}, baseline, {}}, cand{{}, candidate, {}};
  Options options;
  const auto counted = compare(base, {&cand}, {"run"}, options).runs.at(0);
  options.keep_identical = true;
  const auto kept = compare(base, {&cand}, {"run"}, options).runs.at(0);
  CHECK(counted.pairs.size() == 1);
  REQUIRE(kept.pairs.size() == 5);
  CHECK(kept.identical == counted.identical);
  CHECK(kept.identical == 4);
  CHECK(kept.divergent == counted.divergent);
  CHECK(kept.matrix == counted.matrix);
  std::size_t identical = 0;
  for (const auto& pair : kept.pairs) {
    if (pair.verdict != Verdict::identical) continue;
    ++identical;
    CHECK(pair.divergences.empty());
    CHECK(pair.baseline_id == pair.candidate_id);
  }
  CHECK(identical == 4);
}

TEST_CASE("A token's margin is its logprob less the likeliest other alternative") {
  // Chosen first: the margin to the runner-up.
  auto first = token_with(7, "a", -0.1f, {{7, "a", -0.1f}, {8, "b", -0.5f}, {9, "c", -2.0f}});
  REQUIRE(margin_to_next(first));
  CHECK(*margin_to_next(first) == Approx(0.4));
  // A less likely token sampled: negative.
  auto sampled = token_with(8, "b", -0.5f, {{7, "a", -0.1f}, {8, "b", -0.5f}});
  CHECK(*margin_to_next(sampled) == Approx(-0.4));
  // No ids: the same token found by its bytes; the logprob read from the list when the token has none.
  auto by_bytes = token_with(-1, "a", std::nullopt, {{-1, "a", -0.2f}, {-1, "b", -0.3f}});
  CHECK(*margin_to_next(by_bytes) == Approx(0.1));
  // Nothing else listed, or no logprobs at all: no margin.
  CHECK_FALSE(margin_to_next(token_with(7, "a", -0.1f, {{7, "a", -0.1f}})));
  CHECK_FALSE(margin_to_next(token_with(7, "a", std::nullopt, {})));
}
