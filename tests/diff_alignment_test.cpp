// diff/: an alignment by ids is checked against the request keys. The two cases of issue 29 in
// which ids pair the wrong requests (a proxy's recording of a replay against that replay; a run
// that was itself a replay against a replay of it) fall back to request-key alignment and say so;
// a replay that rewrote its bodies keeps its ids. Each is checked read side by side (lockstep) and
// in passes.
#include <catch2/catch.hpp>

#include <algorithm>

#include "diff/diff.hpp"

using namespace retrace;
using namespace retrace::diff;

namespace {

constexpr std::uint64_t kRequests = 29;

RequestKey key_of(std::uint64_t question) { return RequestKey{0x1000 + question, question * 977}; }
RequestKey rewritten_key_of(std::uint64_t question) { return RequestKey{0x9000 + question, question * 31}; }

Choice answer(std::uint64_t question) {
  Choice choice;
  choice.kind = TokenKind::token_ids;
  choice.finish_reason = "stop";
  for (std::int32_t t = 0; t < 6; ++t) {
    Token token;
    token.id = static_cast<std::int32_t>(question * 10) + t;
    token.bytes = "<" + std::to_string(token.id) + ">";
    choice.tokens.push_back(token);
  }
  return choice;
}

Exchange exchange_of(std::uint64_t id, std::uint64_t question, std::optional<std::uint64_t> source_id,
                     RequestKey key) {
  Exchange exchange;
  exchange.id = id;
  exchange.source_id = source_id;
  exchange.key = key;
  exchange.choices.push_back(answer(question));
  return exchange;
}

// The order answers completed in under concurrency: every question, none where it was sent.
std::vector<std::uint64_t> completion_order() {
  std::vector<std::uint64_t> order;
  for (std::uint64_t i = 0; i < kRequests; ++i) order.push_back((i * 7 + 3) % kRequests);
  return order;
}

Result compare_one(const std::vector<Exchange>& baseline, const std::vector<Exchange>& candidate, bool lockstep) {
  LoadedTrace base{{}, baseline, {}}, cand{{}, candidate, {}};
  Options options;
  options.lockstep = lockstep;
  return compare(base, {&cand}, {"candidate"}, options);
}

void check_all_identical_by_key(const Result& result) {
  const RunComparison& run = result.runs.at(0);
  CHECK(run.alignment == Alignment::key_occurrence);
  CHECK(run.identical == kRequests);
  CHECK(run.divergent == 0);
  CHECK(run.real_changes == 0);
  CHECK(run.missing_in_candidate == 0);
  CHECK(run.missing_in_baseline == 0);
  CHECK(run.exchanges == kRequests);
  CHECK(run.pairs_with_same_key == kRequests);
  CHECK(run.alignment_note.find("aligned by request key instead of") == 0);
  CHECK(run.matrix == std::string(kRequests, '.'));
}

}  // namespace

TEST_CASE("A proxy recording of a replay and that replay pair by request key and are identical") {
  // replay T0 -> record -> server: the replay's exchanges name T0's ids (source_id = question), in
  // the order they completed; the proxy numbered them as they reached it, in another order.
  std::vector<Exchange> recording, replay;
  std::uint64_t id = 0;
  for (std::uint64_t question : completion_order()) recording.push_back(exchange_of(id++, question, std::nullopt, key_of(question)));
  auto order = completion_order();
  std::rotate(order.begin(), order.begin() + 5, order.end());
  for (std::uint64_t question : order) replay.push_back(exchange_of(100 + question, question, question, key_of(question)));
  for (bool lockstep : {true, false}) {
    INFO("lockstep " << lockstep);
    check_all_identical_by_key(compare_one(recording, replay, lockstep));
    // And the other way round: the baseline has the source ids, the candidate none.
    check_all_identical_by_key(compare_one(replay, recording, lockstep));
  }
  const auto result = compare_one(recording, replay, true);
  CHECK(result.runs[0].alignment_note.find("instead of candidate source id <-> baseline id") != std::string::npos);
}

TEST_CASE("A run that was a replay and a replay of that run pair by request key and are identical") {
  // A = replay of T0 (source ids into T0, ids in completion order); B = replay of A (source ids
  // into A), its exchanges completed in yet another order. Bodies unchanged: the keys agree.
  std::vector<Exchange> run, replay_of_run;
  std::uint64_t id = 0;
  for (std::uint64_t question : completion_order()) run.push_back(exchange_of(id++, question, question, key_of(question)));
  std::vector<std::size_t> positions(run.size());
  for (std::size_t i = 0; i < positions.size(); ++i) positions[i] = (i * 11 + 4) % positions.size();
  for (std::size_t position : positions) {
    const Exchange& sent = run[position];
    replay_of_run.push_back(exchange_of(500 + position, sent.source_id.value(), sent.id, sent.key));
  }
  for (bool lockstep : {true, false}) {
    INFO("lockstep " << lockstep);
    check_all_identical_by_key(compare_one(run, replay_of_run, lockstep));
  }
}

TEST_CASE("A replay that rewrote every body keeps its source id alignment and says why") {
  // replay T0 adds stream_options (or --model, --token-ids): no key is T0's, only ids pair them.
  std::vector<Exchange> source, replay;
  for (std::uint64_t question = 0; question < kRequests; ++question)
    source.push_back(exchange_of(question, question, std::nullopt, key_of(question)));
  for (std::uint64_t question : completion_order())
    replay.push_back(exchange_of(300 + question, question, question, rewritten_key_of(question)));
  // One rewritten body happens to be another question's recorded one: no reason to drop the ids.
  replay[4].key = key_of(20);
  for (bool lockstep : {true, false}) {
    INFO("lockstep " << lockstep);
    const auto result = compare_one(source, replay, lockstep);
    const RunComparison& run = result.runs[0];
    CHECK(run.alignment == Alignment::source_to_id);
    CHECK(run.identical == kRequests);
    CHECK(run.pairs_with_same_key == 0);
    CHECK(run.alignment_note ==
          "candidate source id <-> baseline id kept: 29 of 29 pairs carry different request keys, and by request "
          "key 1 would pair (the replay changed the bodies it sent: --model, --token-ids, streaming, --set)");
  }
}

TEST_CASE("Ids whose pairs all carry the same request need no note") {
  std::vector<Exchange> source, replay;
  for (std::uint64_t question = 0; question < kRequests; ++question)
    source.push_back(exchange_of(question, question, std::nullopt, key_of(question)));
  for (std::uint64_t question : completion_order())
    replay.push_back(exchange_of(300 + question, question, question, key_of(question)));
  replay[2].choices[0].tokens[3].id += 1;
  for (bool lockstep : {true, false}) {
    const auto result = compare_one(source, replay, lockstep);
    const RunComparison& run = result.runs[0];
    CHECK(run.alignment == Alignment::source_to_id);
    CHECK(run.pairs_with_same_key == kRequests);
    CHECK(run.alignment_note.empty());
    CHECK(run.identical == kRequests - 1);
    CHECK(run.divergent == 1);
  }
}

TEST_CASE("A divergence found before the fall back to key alignment is counted once") {
  // The wrong pairs by ids all differ, and one answer really changed: after placing the run again
  // by key only that one remains, with its close look.
  std::vector<Exchange> recording, replay;
  std::uint64_t id = 0;
  for (std::uint64_t question : completion_order()) recording.push_back(exchange_of(id++, question, std::nullopt, key_of(question)));
  for (std::uint64_t question = 0; question < kRequests; ++question)
    replay.push_back(exchange_of(100 + question, question, question, key_of(question)));
  replay[7].choices[0].tokens[2].id = 9999;
  for (bool lockstep : {true, false}) {
    INFO("lockstep " << lockstep);
    const auto result = compare_one(recording, replay, lockstep);
    const RunComparison& run = result.runs[0];
    CHECK(run.alignment == Alignment::key_occurrence);
    CHECK(run.identical == kRequests - 1);
    CHECK(run.divergent == 1);
    REQUIRE(run.pairs.size() == 1);
    CHECK(run.pairs[0].candidate_id == 107u);
    REQUIRE(run.pairs[0].divergences.size() == 1);
    CHECK(run.pairs[0].divergences[0].baseline_index == 2);
    CHECK(result.first_divergence_positions == std::vector<std::size_t>{2});
  }
}
