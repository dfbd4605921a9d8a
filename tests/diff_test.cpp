// diff/: first divergence under random chunking, Myers against a plain DP, matchers, the engine.
#include <catch2/catch.hpp>

#include <random>

#include "diff/diff.hpp"

using namespace retrace;
using namespace retrace::diff;

namespace {

// Atomic tokens mixing ASCII and multi-byte UTF-8, so that coalescing and byte-level rechunking
// split and merge characters.
const std::vector<std::string> kPieces = {"a", "b", " the", " cat", "\xC3\xA9", "\xE2\x82\xAC", "\xF0\x9F\x98\x80",
                                          ".", "\n", "xyz", " ", "\xE4\xB8\xAD\xE6\x96\x87"};

std::vector<std::string> random_tokens(std::mt19937& rng, std::size_t count) {
  std::uniform_int_distribution<std::size_t> pick(0, kPieces.size() - 1);
  std::vector<std::string> tokens;
  for (std::size_t i = 0; i < count; ++i) tokens.push_back(kPieces[pick(rng)]);
  return tokens;
}

// Groups consecutive tokens into deltas at random; returns the deltas and, per token, its delta.
struct Chunked {
  std::vector<std::string> deltas;
  std::vector<std::size_t> delta_of_token;
};
Chunked coalesce(std::mt19937& rng, const std::vector<std::string>& tokens, int max_group) {
  std::uniform_int_distribution<int> group(1, max_group);
  Chunked chunked;
  std::size_t i = 0;
  while (i < tokens.size()) {
    int size = group(rng);
    std::string delta;
    for (int g = 0; g < size && i < tokens.size(); ++g, ++i) {
      delta += tokens[i];
      chunked.delta_of_token.push_back(chunked.deltas.size());
    }
    chunked.deltas.push_back(delta);
  }
  return chunked;
}

// Cuts a byte string at random byte offsets, ignoring character boundaries.
std::vector<std::string> rechunk_bytes(std::mt19937& rng, const std::string& text) {
  std::uniform_int_distribution<std::size_t> length(1, 5);
  std::vector<std::string> chunks;
  for (std::size_t at = 0; at < text.size();) {
    std::size_t size = std::min(length(rng), text.size() - at);
    chunks.push_back(text.substr(at, size));
    at += size;
  }
  return chunks;
}

Choice text_choice(const std::vector<std::string>& deltas, std::string finish = "stop") {
  Choice choice;
  choice.kind = TokenKind::text_deltas;
  for (const auto& delta : deltas) {
    Token token;
    token.bytes = delta;
    choice.tokens.push_back(token);
  }
  choice.finish_reason = std::move(finish);
  return choice;
}

Choice id_choice(const std::vector<std::int32_t>& ids) {
  Choice choice;
  choice.kind = TokenKind::token_ids;
  for (auto id : ids) {
    Token token;
    token.id = id;
    token.bytes = "<" + std::to_string(id) + ">";
    choice.tokens.push_back(token);
  }
  choice.finish_reason = "length";
  return choice;
}

std::string concat(const std::vector<std::string>& parts) {
  std::string out;
  for (const auto& part : parts) out += part;
  return out;
}

Exchange exchange_with(std::uint64_t id, std::uint64_t key, std::vector<Choice> choices) {
  Exchange exchange;
  exchange.id = id;
  exchange.key = RequestKey{key, key * 7};
  exchange.choices = std::move(choices);
  return exchange;
}

std::size_t plain_dp_distance(const std::string& a, const std::string& b) {
  // Insertions + deletions = |a| + |b| - 2 LCS.
  std::vector<std::vector<std::size_t>> lcs(a.size() + 1, std::vector<std::size_t>(b.size() + 1, 0));
  for (std::size_t i = 1; i <= a.size(); ++i)
    for (std::size_t j = 1; j <= b.size(); ++j)
      lcs[i][j] = a[i - 1] == b[j - 1] ? lcs[i - 1][j - 1] + 1 : std::max(lcs[i - 1][j], lcs[i][j - 1]);
  return a.size() + b.size() - 2 * lcs[a.size()][b.size()];
}

}  // namespace

TEST_CASE("A divergence injected at token k is reported at k on both sides when nothing is coalesced") {
  std::mt19937 rng(1);
  for (int trial = 0; trial < 300; ++trial) {
    auto tokens = random_tokens(rng, 1 + rng() % 40);
    std::size_t k = rng() % tokens.size();
    auto changed = tokens;
    changed[k] = "Z" + tokens[k];  // differs in its first byte ('Z' starts no piece)
    auto divergence = first_divergence(text_choice(tokens), text_choice(changed), Options{});
    REQUIRE(divergence);
    CHECK(divergence->basis == Basis::bytes);
    CHECK(divergence->baseline_index == k);
    CHECK(divergence->candidate_index == k);
    CHECK(divergence->byte_offset == concat({tokens.begin(), tokens.begin() + std::ptrdiff_t(k)}).size());
    REQUIRE(divergence->baseline_token);
    CHECK(divergence->baseline_token->bytes == tokens[k]);
    CHECK(divergence->candidate_token->bytes == changed[k]);
  }
}

TEST_CASE("Under random coalescing the reported index is the delta holding token k on each side") {
  std::mt19937 rng(2);
  for (int trial = 0; trial < 500; ++trial) {
    auto tokens = random_tokens(rng, 1 + rng() % 60);
    std::size_t k = rng() % tokens.size();
    auto changed = tokens;
    changed[k] = "Q";
    if (tokens[k] == "Q") continue;
    auto left = coalesce(rng, tokens, 4);
    auto right = coalesce(rng, changed, 6);
    auto divergence = first_divergence(text_choice(left.deltas), text_choice(right.deltas), Options{});
    REQUIRE(divergence);
    CHECK(divergence->baseline_index == left.delta_of_token[k]);
    CHECK(divergence->candidate_index == right.delta_of_token[k]);
    CHECK(divergence->baseline_tokens == left.deltas.size());
    CHECK(divergence->candidate_tokens == right.deltas.size());
  }
}

TEST_CASE("The same text chunked differently is identical - even with UTF-8 split across chunks") {
  std::mt19937 rng(3);
  for (int trial = 0; trial < 300; ++trial) {
    auto tokens = random_tokens(rng, rng() % 50);
    auto coalesced = coalesce(rng, tokens, 5);
    auto bytewise = rechunk_bytes(rng, concat(tokens));
    CHECK_FALSE(first_divergence(text_choice(tokens), text_choice(coalesced.deltas), Options{}));
    CHECK_FALSE(first_divergence(text_choice(coalesced.deltas), text_choice(bytewise), Options{}));
  }
}

TEST_CASE("A divergence inside a multi-byte character maps to the chunk holding that byte") {
  // "é€" vs "é₤": the euro sign E2 82 AC and the lira sign E2 82 A4 differ in their third byte.
  auto baseline = text_choice({"\xC3", "\xA9\xE2", "\x82", "\xAC!"});
  auto candidate = text_choice({"\xC3\xA9", "\xE2\x82\xA4", "!"});
  auto divergence = first_divergence(baseline, candidate, Options{});
  REQUIRE(divergence);
  CHECK(divergence->byte_offset == 4);
  CHECK(divergence->baseline_index == 3);
  CHECK(divergence->candidate_index == 1);
}

TEST_CASE("Several byte tokens merged into one event compare equal to the tokens apart") {
  // llama.cpp sends the bytes of a multi-byte character as separate byte tokens, sometimes
  // merged into one event.
  Choice separate = text_choice({"\xF0", "\x9F", "\x98", "\x80", " ok"});
  Choice merged = text_choice({"\xF0\x9F\x98\x80", " ok"});
  CHECK_FALSE(first_divergence(separate, merged, Options{}));
  Choice changed = text_choice({"\xF0\x9F\x98\x81", " ok"});
  auto divergence = first_divergence(separate, changed, Options{});
  REQUIRE(divergence);
  CHECK(divergence->byte_offset == 3);
  CHECK(divergence->baseline_index == 3);
  CHECK(divergence->candidate_index == 0);
}

TEST_CASE("Token ids on both sides are compared as ids - and the index is the same on both") {
  std::mt19937 rng(4);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<std::int32_t> ids(1 + rng() % 80);
    for (auto& id : ids) id = std::int32_t(rng() % 1000);
    std::size_t k = rng() % ids.size();
    auto changed = ids;
    changed[k] += 1000;
    auto divergence = first_divergence(id_choice(ids), id_choice(changed), Options{});
    REQUIRE(divergence);
    CHECK(divergence->basis == Basis::token_ids);
    CHECK(divergence->basis_note.empty());
    CHECK(divergence->baseline_index == k);
    CHECK(divergence->candidate_index == k);
    CHECK_FALSE(first_divergence(id_choice(ids), id_choice(ids), Options{}));
  }
}

TEST_CASE("Ids on one side only fall back to bytes and say so") {
  auto with_ids = id_choice({1, 2, 3});
  auto text = text_choice({"<1><2", "><3>"});
  CHECK_FALSE(first_divergence(with_ids, text, Options{}));
  auto changed = text_choice({"<1><2", "><4>"});
  auto divergence = first_divergence(with_ids, changed, Options{});
  REQUIRE(divergence);
  CHECK(divergence->basis == Basis::bytes);
  CHECK(divergence->basis_note == "token ids on the baseline only: compared bytes");
  CHECK(divergence->baseline_index == 2);
  CHECK(divergence->candidate_index == 1);
}

TEST_CASE("Empty outputs: both empty is identical - one empty diverges at index 0") {
  CHECK_FALSE(first_divergence(text_choice({}), text_choice({}), Options{}));
  CHECK_FALSE(first_divergence(text_choice({""}), text_choice({}), Options{}));
  auto divergence = first_divergence(text_choice({}), text_choice({"hi"}), Options{});
  REQUIRE(divergence);
  CHECK(divergence->baseline_index == 0);
  CHECK(divergence->candidate_index == 0);
  CHECK_FALSE(divergence->baseline_token);
  CHECK(divergence->candidate_token->bytes == "hi");
}

TEST_CASE("A prefix diverges where the shorter side ends - with that side's token absent") {
  auto divergence = first_divergence(text_choice({"a", "b"}, "length"), text_choice({"ab", "c"}, "stop"), Options{});
  REQUIRE(divergence);
  CHECK(divergence->baseline_index == 2);
  CHECK(divergence->candidate_index == 1);
  CHECK_FALSE(divergence->baseline_token);
  CHECK(divergence->baseline_finish == "length");
  CHECK(divergence->candidate_finish == "stop");
  CHECK(divergence->classification == Classification::unknown);
}

TEST_CASE("Context holds K tokens either side of the divergence on each side") {
  Options options;
  options.context = 2;
  auto divergence = first_divergence(text_choice({"0", "1", "2", "3", "4", "5", "6"}),
                                     text_choice({"01", "2", "X", "4", "5", "6"}), options);
  REQUIRE(divergence);
  CHECK(divergence->baseline_index == 3);
  CHECK(divergence->candidate_index == 2);
  REQUIRE(divergence->baseline_before.size() == 2);
  CHECK(divergence->baseline_before[0].bytes == "1");
  REQUIRE(divergence->baseline_after.size() == 2);
  CHECK(divergence->baseline_after[1].bytes == "5");
  REQUIRE(divergence->candidate_before.size() == 2);
  CHECK(divergence->candidate_before[0].bytes == "01");
  CHECK(divergence->candidate_after.size() == 2);
  CHECK(divergence->common_suffix == 3);  // "456"
  CHECK(divergence->edit_distance == 2);  // "3" deleted, "X" inserted
}

TEST_CASE("Margins come from the top alternatives and classify near-ties and real changes") {
  auto with_top = [](std::int32_t chosen, float chosen_logprob, std::vector<Alternative> top) {
    Choice choice = id_choice({7, chosen});
    choice.tokens[1].has_logprob = true;
    choice.tokens[1].logprob = chosen_logprob;
    for (const Alternative& alternative : top) choice.add_alternative(choice.tokens[1]) = alternative;
    return choice;
  };
  Options options;
  SECTION("close candidates are a near-tie") {
    auto baseline = with_top(10, -0.70f, {{10, "<10>", -0.70f}, {11, "<11>", -0.72f}});
    auto candidate = with_top(11, -0.69f, {{11, "<11>", -0.69f}, {10, "<10>", -0.70f}});
    auto divergence = first_divergence(baseline, candidate, options);
    REQUIRE(divergence);
    REQUIRE(divergence->margin);
    CHECK(*divergence->margin == Approx(0.02).margin(1e-6));
    CHECK(divergence->classification == Classification::near_tie);
  }
  SECTION("distant candidates are a real change") {
    auto baseline = with_top(10, -0.1f, {{10, "<10>", -0.1f}, {11, "<11>", -2.5f}});
    auto candidate = with_top(11, -0.2f, {});
    auto divergence = first_divergence(baseline, candidate, options);
    REQUIRE(divergence);
    CHECK(*divergence->margin == Approx(2.4).margin(1e-5));
    CHECK(divergence->classification == Classification::real_change);
  }
  SECTION("a token absent from the top list bounds the margin from below") {
    auto baseline = with_top(10, -0.1f, {{10, "<10>", -0.1f}, {12, "<12>", -3.0f}});
    auto candidate = with_top(11, -0.2f, {});
    auto divergence = first_divergence(baseline, candidate, options);
    REQUIRE(divergence);
    CHECK(divergence->margin_is_lower_bound);
    CHECK(divergence->classification == Classification::real_change);
  }
  SECTION("the candidate's list is used when the baseline has none") {
    auto baseline = with_top(10, -0.5f, {});
    baseline.tokens[1].has_logprob = false;
    auto candidate = with_top(11, -0.50f, {{11, "<11>", -0.50f}, {10, "<10>", -0.53f}});
    auto divergence = first_divergence(baseline, candidate, options);
    REQUIRE(divergence);
    CHECK(*divergence->margin == Approx(0.03).margin(1e-6));
    CHECK(divergence->classification == Classification::near_tie);
  }
  SECTION("no logprobs is unknown") {
    auto divergence = first_divergence(id_choice({1, 2}), id_choice({1, 3}), options);
    REQUIRE(divergence);
    CHECK_FALSE(divergence->margin);
    CHECK(divergence->classification == Classification::unknown);
  }
}

TEST_CASE("Myers distance agrees with a plain dynamic programme on random small inputs") {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 2000; ++trial) {
    std::string a, b;
    std::size_t n = rng() % 12, m = rng() % 12;
    for (std::size_t i = 0; i < n; ++i) a += char('a' + rng() % 3);
    for (std::size_t i = 0; i < m; ++i) b += char('a' + rng() % 3);
    auto expected = plain_dp_distance(a, b);
    auto result = myers_distance(a, b, 100);
    INFO(a << " / " << b);
    CHECK_FALSE(result.capped);
    CHECK(result.distance == expected);
    std::vector<std::uint64_t> ua(a.begin(), a.end()), ub(b.begin(), b.end());
    CHECK(myers_distance(ua, ub, 100).distance == expected);
    if (expected > 0) {
      auto capped = myers_distance(a, b, expected - 1);
      CHECK(capped.capped);
    }
  }
}

TEST_CASE("Matchers: exact - normalized - contains - regex extraction and JSON fields") {
  Options options;
  CHECK(matches_expected("Paris", "Paris", options));
  CHECK_FALSE(matches_expected("Paris.", "Paris", options));
  options.match = Match::normalized;
  CHECK(matches_expected("  PARIS \n.", "paris", options));
  CHECK(matches_expected("New   York!", "new york", options));
  CHECK_FALSE(matches_expected("Paris, France", "Paris", options));
  options.match = Match::contains;
  CHECK(matches_expected("The answer is Paris.", "paris", options));
  CHECK_FALSE(matches_expected("The answer is Lyon.", "paris", options));
  options.match = Match::regex;
  options.match_arg = "answer is (\\d+)";
  CHECK(matches_expected("so the answer is 42, done", "42", options));
  CHECK_FALSE(matches_expected("so the answer is 41", "42", options));
  CHECK_FALSE(matches_expected("no number", "42", options));
  options.match = Match::json_field;
  options.match_arg = "result.value";
  CHECK(matches_expected("{\"result\": {\"value\": 42}}", "42", options));
  CHECK(matches_expected("```json\n{\"result\": {\"value\": \"yes\"}}\n```", "yes", options));
  CHECK_FALSE(matches_expected("{\"result\": {\"value\": 41}}", "42", options));
  CHECK_FALSE(matches_expected("not json", "42", options));
  CHECK(parse_matcher("regex:a(b)")->second == "a(b)");
  CHECK(parse_matcher("json:x")->first == Match::json_field);
  CHECK_FALSE(parse_matcher("fuzzy"));
}

TEST_CASE("The engine sorts pairs into identical - divergent - error and missing") {
  std::vector<Exchange> baseline, candidate;
  for (std::uint64_t i = 0; i < 6; ++i)
    baseline.push_back(exchange_with(i, 100 + i, {text_choice({"hello", " world"})}));
  candidate = baseline;
  candidate[1].choices[0] = text_choice({"hel", "lo wor", "ld"});  // chunked differently
  candidate[2].choices[0] = text_choice({"hello", " there"});
  candidate[3].error = {ErrorKind::timeout, "no response in 30 s"};
  candidate.erase(candidate.begin() + 4);                          // baseline 4 missing
  candidate.push_back(exchange_with(99, 999, {text_choice({"extra"})}));

  LoadedTrace base{{}, baseline, {}}, cand{{}, candidate, {}};
  auto result = compare(base, {&cand}, {"run"}, Options{});
  REQUIRE(result.runs.size() == 1);
  const auto& run = result.runs[0];
  CHECK(run.alignment == Alignment::key_occurrence);
  CHECK(run.identical == 3);
  CHECK(run.divergent == 1);
  CHECK(run.errors == 1);
  CHECK(run.missing_in_candidate == 1);
  CHECK(run.missing_in_baseline == 1);
  CHECK(run.matrix == "..DEM.");
  REQUIRE(run.pairs.size() == 4);
  const PairResult* divergent = nullptr;
  for (const auto& pair : run.pairs)
    if (pair.verdict == Verdict::divergent) divergent = &pair;
  REQUIRE(divergent);
  REQUIRE(divergent->divergences.size() == 1);
  CHECK(divergent->divergences[0].baseline_index == 1);
  CHECK(divergent->divergences[0].byte_offset == 6);
  CHECK(failing_outputs(result, FailOn::any) == 4);
  CHECK(failing_outputs(result, FailOn::none) == 0);
}

TEST_CASE("Replays align by source id - and a replay aligns to its source trace by id") {
  std::vector<Exchange> source, replay_a, replay_b;
  for (std::uint64_t i = 0; i < 4; ++i) source.push_back(exchange_with(i, 7, {text_choice({"x" + std::to_string(i)})}));
  // Replays in another order, same request key everywhere: only ids can pair them.
  for (std::uint64_t i : {3, 1, 0, 2}) {
    Exchange exchange = source[i];
    exchange.id = 50 + i;
    exchange.source_id = i;
    replay_a.push_back(exchange);
    exchange.id = 80 + i;
    replay_b.push_back(exchange);
  }
  replay_b[0].choices[0] = text_choice({"changed"});  // source 3
  LoadedTrace s{{}, source, {}}, a{{}, replay_a, {}}, b{{}, replay_b, {}};
  auto to_source = compare(s, {&a}, {"a"}, Options{});
  CHECK(to_source.runs[0].alignment == Alignment::source_to_id);
  CHECK(to_source.runs[0].identical == 4);
  auto between = compare(a, {&b}, {"b"}, Options{});
  CHECK(between.runs[0].alignment == Alignment::source_to_source);
  CHECK(between.runs[0].identical == 3);
  CHECK(between.runs[0].divergent == 1);
  CHECK(between.runs[0].matrix == "D...");
  CHECK(between.runs[0].pairs[0].baseline_id == 53u);
  CHECK(between.runs[0].pairs[0].candidate_id == 83u);
}

TEST_CASE("Runs that cycle a short trace pair each copy with a copy of its own source") {
  // replay --requests 5 over sources 0 and 1: each run sends 0 three times and 1 twice, written in
  // completion order, which differs between the runs. Every question answers the same ("a0"/"a1").
  auto copy = [](std::uint64_t id, std::uint64_t source) {
    Exchange exchange = exchange_with(id, 3, {text_choice({"a" + std::to_string(source)})});
    exchange.source_id = source;
    return exchange;
  };
  std::vector<Exchange> baseline{copy(0, 0), copy(1, 1), copy(2, 0), copy(3, 0), copy(4, 1)};
  std::vector<Exchange> candidate{copy(0, 1), copy(1, 0), copy(2, 0), copy(3, 1), copy(4, 0)};
  LoadedTrace base{{}, baseline, {}}, cand{{}, candidate, {}};
  auto result = compare(base, {&cand}, {"c"}, Options{});
  CHECK(result.runs[0].alignment == Alignment::source_to_source);
  CHECK(result.runs[0].identical == 5);
  CHECK(result.runs[0].missing_in_candidate == 0);
  CHECK(result.runs[0].missing_in_baseline == 0);
  // A changed answer to one copy of source 1 is that copy's divergence, not another question's.
  candidate[3].choices[0] = text_choice({"changed"});
  LoadedTrace changed{{}, candidate, {}};
  result = compare(base, {&changed}, {"c"}, Options{});
  CHECK(result.runs[0].identical == 4);
  CHECK(result.runs[0].divergent == 1);
  CHECK(result.runs[0].matrix == "....D");  // the baseline's second copy of source 1
}

TEST_CASE("Repeated requests align by occurrence number") {
  std::vector<Exchange> baseline, candidate;
  for (std::uint64_t i = 0; i < 3; ++i) baseline.push_back(exchange_with(i, 5, {text_choice({"r" + std::to_string(i)})}));
  candidate = baseline;
  candidate[2].choices[0] = text_choice({"r9"});
  LoadedTrace base{{}, baseline, {}}, cand{{}, candidate, {}};
  auto result = compare(base, {&cand}, {"c"}, Options{});
  CHECK(result.runs[0].matrix == "..D");
}

TEST_CASE("Several choices are compared by index - and an absent choice compares as empty") {
  Choice second = text_choice({"two"});
  second.index = 1;
  std::vector<Exchange> baseline{exchange_with(0, 1, {text_choice({"one"}), second})};
  std::vector<Exchange> candidate{exchange_with(0, 1, {text_choice({"one"}), text_choice({"tw", "x"})})};
  candidate[0].choices[1].index = 1;
  std::vector<Exchange> fewer{exchange_with(0, 1, {text_choice({"one"})})};
  LoadedTrace base{{}, baseline, {}}, cand{{}, candidate, {}}, short_cand{{}, fewer, {}};
  auto result = compare(base, {&cand, &short_cand}, {"c", "short"}, Options{});
  REQUIRE(result.runs[0].pairs.size() == 1);
  REQUIRE(result.runs[0].pairs[0].divergences.size() == 1);
  CHECK(result.runs[0].pairs[0].divergences[0].choice == 1);
  CHECK(result.runs[0].pairs[0].divergences[0].candidate_index == 1);
  REQUIRE(result.runs[1].pairs.size() == 1);
  CHECK(result.runs[1].pairs[0].divergences[0].basis_note == "choice absent on the candidate");
}

TEST_CASE("Ids on one side only with the same text end up identical after the close look") {
  std::vector<Exchange> baseline{exchange_with(0, 1, {id_choice({4, 5})})};
  std::vector<Exchange> candidate{exchange_with(0, 1, {text_choice({"<4><", "5>"})})};
  LoadedTrace base{{}, baseline, {}}, cand{{}, candidate, {}};
  auto result = compare(base, {&cand}, {"c"}, Options{});
  CHECK(result.runs[0].identical == 1);
  CHECK(result.runs[0].divergent == 0);
  CHECK(result.runs[0].pairs.empty());
}

TEST_CASE("A tiny memory budget re-reads candidates in batches and gives the same result") {
  std::mt19937 rng(6);
  std::vector<Exchange> baseline, candidate;
  for (std::uint64_t i = 0; i < 200; ++i) {
    auto tokens = random_tokens(rng, 20);
    baseline.push_back(exchange_with(i, i, {text_choice(tokens)}));
    if (i % 3 == 0) tokens[rng() % tokens.size()] = "#";
    candidate.push_back(exchange_with(i, i, {text_choice(coalesce(rng, tokens, 3).deltas)}));
  }
  LoadedTrace base{{}, baseline, {}}, cand{{}, candidate, {}};
  Options roomy, tight;
  tight.memory_budget = 1;
  auto a = compare(base, {&cand}, {"c"}, roomy);
  auto b = compare(base, {&cand}, {"c"}, tight);
  CHECK(a.runs[0].matrix == b.runs[0].matrix);
  CHECK(a.runs[0].divergent == b.runs[0].divergent);
  REQUIRE(a.runs[0].pairs.size() == b.runs[0].pairs.size());
  for (std::size_t i = 0; i < a.runs[0].pairs.size(); ++i) {
    REQUIRE(b.runs[0].pairs[i].divergences.size() == a.runs[0].pairs[i].divergences.size());
    CHECK(a.runs[0].pairs[i].divergences[0].baseline_index == b.runs[0].pairs[i].divergences[0].baseline_index);
    CHECK(a.runs[0].pairs[i].divergences[0].candidate_index == b.runs[0].pairs[i].divergences[0].candidate_index);
  }
}

TEST_CASE("N-way comparison groups runs by completion") {
  std::vector<Exchange> baseline{exchange_with(0, 1, {text_choice({"same"})}), exchange_with(1, 2, {text_choice({"p"})})};
  auto run_a = baseline, run_b = baseline, run_c = baseline;
  run_a[1].choices[0] = text_choice({"q"});
  run_b[1].choices[0] = text_choice({"q"});
  run_c[1].error = {ErrorKind::reset, "peer reset"};
  LoadedTrace base{{}, baseline, {}}, a{{}, run_a, {}}, b{{}, run_b, {}}, c{{}, run_c, {}};
  auto result = compare(base, {&a, &b, &c}, {"a", "b", "c"}, Options{});
  CHECK(result.unique_completions_histogram[1] == 1);
  CHECK(result.unique_completions_histogram[2] == 1);
  REQUIRE(result.requests.size() == 1);
  CHECK(result.requests[0].baseline_position == 1);
  REQUIRE(result.requests[0].groups.size() == 2);
  CHECK(result.requests[0].groups[0] == std::vector<std::size_t>{0});
  CHECK(result.requests[0].groups[1] == std::vector<std::size_t>{1, 2});
  CHECK(result.first_divergence_positions == std::vector<std::size_t>{0, 0});
}

TEST_CASE("Expected answers come from the baseline and are counted per run") {
  std::vector<Exchange> baseline;
  for (std::uint64_t i = 0; i < 4; ++i) {
    baseline.push_back(exchange_with(i, i, {text_choice({"Answer: ", std::to_string(i)})}));
    baseline.back().expected = std::to_string(i);
  }
  auto candidate = baseline;
  for (auto& exchange : candidate) exchange.expected.reset();  // carried by the baseline only
  candidate[0].choices[0] = text_choice({"Answer: 7"});
  LoadedTrace base{{}, baseline, {}}, cand{{}, candidate, {}};
  Options options;
  options.expect = true;
  options.match = Match::contains;
  auto result = compare(base, {&cand}, {"c"}, options);
  CHECK(result.baseline_matches_expected == 4u);
  CHECK(result.runs[0].with_expected == 4u);
  CHECK(result.runs[0].matches_expected == 3u);
  REQUIRE(result.runs[0].pairs.size() == 1);
  CHECK(result.runs[0].pairs[0].candidate_matches_expected == false);
  CHECK(result.runs[0].pairs[0].baseline_matches_expected == true);
}

TEST_CASE("A gold question failing in a run is named by its baseline exchange id") {
  std::vector<Exchange> baseline, candidate;
  for (std::uint64_t i = 0; i < 4; ++i) {
    baseline.push_back(exchange_with(i, i, {text_choice({"Answer: ", std::to_string(i)})}));
    baseline.back().expected = std::to_string(i);
  }
  // The run answered the same questions in another order, so its own ids differ from the baseline's.
  for (std::uint64_t i = 0; i < 4; ++i) {
    std::uint64_t key = 3 - i;
    candidate.push_back(exchange_with(10 + i, key, {text_choice({"Answer: ", std::to_string(key)})}));
  }
  candidate[1].choices[0] = text_choice({"Answer: 7"});  // key 2, the baseline's exchange 2
  LoadedTrace base{{}, baseline, {}}, cand{{}, candidate, {}};
  Options options;
  options.expect = true;
  options.match = Match::contains;
  auto result = compare(base, {&cand}, {"c"}, options);
  CHECK(result.runs[0].failing_expected == std::vector<std::uint64_t>{2});
}

TEST_CASE("Under --fail-on real - near-tie divergences do not count") {
  auto near = [](std::int32_t chosen) {
    Choice choice = id_choice({chosen});
    choice.tokens[0].has_logprob = true;
    choice.tokens[0].logprob = -0.69f;
    choice.add_alternative(choice.tokens[0]) = {1, "<1>", -0.69f};
    choice.add_alternative(choice.tokens[0]) = {2, "<2>", -0.70f};
    return choice;
  };
  std::vector<Exchange> baseline{exchange_with(0, 1, {near(1)}), exchange_with(1, 2, {id_choice({5, 6})})};
  std::vector<Exchange> candidate{exchange_with(0, 1, {near(2)}), exchange_with(1, 2, {id_choice({5, 6})})};
  LoadedTrace base{{}, baseline, {}}, cand{{}, candidate, {}};
  auto result = compare(base, {&cand}, {"c"}, Options{});
  CHECK(result.runs[0].near_ties == 1);
  CHECK(failing_outputs(result, FailOn::any) == 1);
  CHECK(failing_outputs(result, FailOn::real) == 0);
  candidate[1].choices[0] = id_choice({5, 7});
  LoadedTrace cand2{{}, candidate, {}};
  auto second = compare(base, {&cand2}, {"c"}, Options{});
  CHECK(second.runs[0].unknown_changes == 1);
  CHECK(failing_outputs(second, FailOn::real) == 1);
}
