// diff/lockstep.cpp: one candidate in the baseline's order is compared side by side, and gives
// exactly what the passes give - every verdict, first divergent token and summary - including
// when its order breaks halfway, a trace ends early, or the baseline repeats a key.
#include <catch2/catch.hpp>

#include <random>

#include "diff/diff.hpp"
#include "tests/temp_dir.hpp"

using namespace retrace;
using namespace retrace::diff;

namespace {

Choice choice_of(const std::vector<std::int32_t>& ids, bool with_ids) {
  Choice choice;
  choice.finish_reason = "length";
  for (std::int32_t id : ids) {
    Token token;
    token.id = with_ids ? id : -1;
    token.bytes = "<" + std::to_string(id) + ">";
    token.has_logprob = true;
    token.logprob = -0.5f;
    const std::vector<Alternative> top = {{id, token.bytes, -0.5f},
                                          {id + 1, "<" + std::to_string(id + 1) + ">", id % 2 ? -0.52f : -2.0f}};
    choice.add_token(token, top);
  }
  return choice;
}

// `count` exchanges with distinct request keys, 12 tokens each (ids on most, bytes only on some),
// every fourth carrying an expected answer.
std::vector<Exchange> baseline_trace(std::mt19937& rng, std::size_t count) {
  std::vector<Exchange> exchanges;
  for (std::uint64_t i = 0; i < count; ++i) {
    Exchange exchange;
    exchange.id = i;
    exchange.key = RequestKey{1000 + i, i * 31};
    std::vector<std::int32_t> ids;
    for (int t = 0; t < 12; ++t) ids.push_back(std::int32_t(rng() % 50));
    exchange.choices.push_back(choice_of(ids, i % 7 != 3));
    if (i % 4 == 0) exchange.expected = "<" + std::to_string(ids[0]) + ">";
    exchanges.push_back(std::move(exchange));
  }
  return exchanges;
}

// A replay of `baseline` in the same order: some outputs changed at a random token (some by a
// near-tie), some failed, one with an extra choice, ids 500 on.
std::vector<Exchange> replay_of(std::mt19937& rng, const std::vector<Exchange>& baseline) {
  std::vector<Exchange> exchanges = baseline;
  for (std::size_t i = 0; i < exchanges.size(); ++i) {
    Exchange& exchange = exchanges[i];
    exchange.id = 500 + i;
    exchange.expected.reset();
    switch (rng() % 9) {
      case 0: {
        Token& token = exchange.choices[0].tokens[rng() % exchange.choices[0].tokens.size()];
        if (token.id >= 0) token.id += 1;
        token.bytes = "<x>";
        break;
      }
      case 1: exchange.choices[0].tokens.resize(rng() % 12); break;
      case 2: exchange.error = {ErrorKind::timeout, "no response"}; break;
      case 3: exchange.choices.push_back(exchange.choices[0]), exchange.choices.back().index = 1; break;
      default: break;
    }
  }
  return exchanges;
}

void check_same_token(const std::optional<TokenView>& a, const std::optional<TokenView>& b) {
  REQUIRE(a.has_value() == b.has_value());
  if (!a) return;
  CHECK(a->id == b->id);
  CHECK(a->bytes == b->bytes);
  CHECK(a->logprob == b->logprob);
  CHECK(a->top.size() == b->top.size());
}

void check_same_tokens(const std::vector<TokenView>& a, const std::vector<TokenView>& b) {
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) check_same_token(a[i], b[i]);
}

void check_same_divergence(const Divergence& a, const Divergence& b) {
  CHECK(a.choice == b.choice);
  CHECK(a.basis == b.basis);
  CHECK(a.basis_note == b.basis_note);
  CHECK(a.baseline_index == b.baseline_index);
  CHECK(a.candidate_index == b.candidate_index);
  CHECK(a.byte_offset == b.byte_offset);
  check_same_token(a.baseline_token, b.baseline_token);
  check_same_token(a.candidate_token, b.candidate_token);
  check_same_tokens(a.baseline_before, b.baseline_before);
  check_same_tokens(a.baseline_after, b.baseline_after);
  check_same_tokens(a.candidate_before, b.candidate_before);
  check_same_tokens(a.candidate_after, b.candidate_after);
  CHECK(a.margin == b.margin);
  CHECK(a.margin_is_lower_bound == b.margin_is_lower_bound);
  CHECK(a.classification == b.classification);
  CHECK(a.common_suffix == b.common_suffix);
  CHECK(a.edit_distance == b.edit_distance);
  CHECK(a.edit_distance_capped == b.edit_distance_capped);
  CHECK(a.baseline_tokens == b.baseline_tokens);
  CHECK(a.candidate_tokens == b.candidate_tokens);
  CHECK(a.baseline_bytes == b.baseline_bytes);
  CHECK(a.candidate_bytes == b.candidate_bytes);
  CHECK(a.baseline_finish == b.baseline_finish);
  CHECK(a.candidate_finish == b.candidate_finish);
}

// Everything a Result says, but how many exchanges were read side by side.
void check_same_result(const Result& a, const Result& b) {
  CHECK(a.baseline_name == b.baseline_name);
  CHECK(a.baseline_exchanges == b.baseline_exchanges);
  CHECK(a.baseline_matches_expected == b.baseline_matches_expected);
  CHECK(a.baseline_with_expected == b.baseline_with_expected);
  CHECK(a.baseline_failing_expected == b.baseline_failing_expected);
  CHECK(a.unique_completions_histogram == b.unique_completions_histogram);
  CHECK(a.first_divergence_positions == b.first_divergence_positions);
  CHECK(a.compared_bytes_somewhere == b.compared_bytes_somewhere);
  CHECK(a.warnings == b.warnings);
  REQUIRE(a.requests.size() == b.requests.size());
  for (std::size_t i = 0; i < a.requests.size(); ++i) {
    CHECK(a.requests[i].baseline_position == b.requests[i].baseline_position);
    CHECK(a.requests[i].baseline_id == b.requests[i].baseline_id);
    CHECK(a.requests[i].groups == b.requests[i].groups);
  }
  REQUIRE(a.runs.size() == b.runs.size());
  for (std::size_t r = 0; r < a.runs.size(); ++r) {
    const RunComparison& x = a.runs[r];
    const RunComparison& y = b.runs[r];
    CHECK(x.name == y.name);
    CHECK(x.alignment == y.alignment);
    CHECK(x.exchanges == y.exchanges);
    CHECK(x.aligned == y.aligned);
    CHECK(x.identical == y.identical);
    CHECK(x.divergent == y.divergent);
    CHECK(x.errors == y.errors);
    CHECK(x.missing_in_candidate == y.missing_in_candidate);
    CHECK(x.missing_in_baseline == y.missing_in_baseline);
    CHECK(x.near_ties == y.near_ties);
    CHECK(x.real_changes == y.real_changes);
    CHECK(x.unknown_changes == y.unknown_changes);
    CHECK(x.matches_expected == y.matches_expected);
    CHECK(x.with_expected == y.with_expected);
    CHECK(x.failing_expected == y.failing_expected);
    CHECK(x.matrix == y.matrix);
    REQUIRE(x.pairs.size() == y.pairs.size());
    for (std::size_t i = 0; i < x.pairs.size(); ++i) {
      const PairResult& p = x.pairs[i];
      const PairResult& q = y.pairs[i];
      CHECK(p.baseline_id == q.baseline_id);
      CHECK(p.candidate_id == q.candidate_id);
      CHECK(p.baseline_position == q.baseline_position);
      CHECK(p.candidate_position == q.candidate_position);
      CHECK(p.key == q.key);
      CHECK(p.verdict == q.verdict);
      CHECK(p.error == q.error);
      CHECK(p.baseline_matches_expected == q.baseline_matches_expected);
      CHECK(p.candidate_matches_expected == q.candidate_matches_expected);
      REQUIRE(p.divergences.size() == q.divergences.size());
      for (std::size_t d = 0; d < p.divergences.size(); ++d) check_same_divergence(p.divergences[d], q.divergences[d]);
    }
  }
}

struct Both {
  Result lockstep, passes;
};

Both compare_both(const std::vector<Exchange>& baseline, const std::vector<Exchange>& candidate,
                  Options options = {}) {
  options.expect = true;
  options.match = Match::contains;
  LoadedTrace base{{}, baseline, {}}, cand{{}, candidate, {}};
  Options in_passes = options;
  in_passes.lockstep = false;
  Both both{compare(base, {&cand}, {"c"}, options), compare(base, {&cand}, {"c"}, in_passes)};
  CHECK(both.passes.runs[0].compared_in_lockstep == 0);
  check_same_result(both.lockstep, both.passes);
  return both;
}

}  // namespace

TEST_CASE("A candidate in the baseline's order is compared wholly in lockstep - with the passes' result") {
  std::mt19937 rng(18);
  auto baseline = baseline_trace(rng, 300);
  auto candidate = replay_of(rng, baseline);
  auto both = compare_both(baseline, candidate);
  const RunComparison& run = both.lockstep.runs[0];
  CHECK(run.compared_in_lockstep == 300);
  // The inputs exercise every verdict and class, and the close look that finds ids on one side.
  CHECK(run.divergent > 10);
  CHECK(run.errors > 10);
  CHECK(run.near_ties > 0);
  CHECK(run.real_changes > 0);
  CHECK(run.identical > 100);
  CHECK(both.lockstep.compared_bytes_somewhere);
  CHECK(*run.with_expected > 50);
}

TEST_CASE("Where the candidate's order breaks halfway the passes take over - nothing compared twice or lost") {
  std::mt19937 rng(19);
  auto baseline = baseline_trace(rng, 200);
  auto candidate = replay_of(rng, baseline);
  // Divergent pairs on both sides of the break, and one right at it.
  for (std::size_t i : {100, 101}) {
    candidate[i] = baseline[i];
    candidate[i].id = 500 + i;
    candidate[i].choices[0].tokens[i - 97].bytes = "<changed>";
  }
  std::swap(candidate[100], candidate[101]);
  std::shuffle(candidate.begin() + 150, candidate.end(), rng);
  candidate.erase(candidate.begin() + 120);                          // missing in the candidate
  candidate.insert(candidate.begin() + 130, candidate[10]);          // a key seen again
  candidate[130].key = RequestKey{7, 7};                             // missing in the baseline
  auto both = compare_both(baseline, candidate);
  const RunComparison& run = both.lockstep.runs[0];
  CHECK(run.compared_in_lockstep == 100);
  CHECK(run.exchanges == 200);
  CHECK(run.aligned == 199);
  CHECK(run.missing_in_candidate == 1);
  CHECK(run.missing_in_baseline == 1);
  CHECK(run.matrix[100] == 'D');
  CHECK(run.matrix[101] == 'D');
  CHECK(run.identical + run.divergent + run.errors == run.aligned);
}

TEST_CASE("A trace that ends first - or a repeated baseline key - ends the lockstep with the same result") {
  std::mt19937 rng(20);
  auto baseline = baseline_trace(rng, 60);
  auto candidate = replay_of(rng, baseline);

  auto shorter = candidate;
  shorter.resize(40);
  auto both = compare_both(baseline, shorter);
  CHECK(both.lockstep.runs[0].compared_in_lockstep == 40);
  CHECK(both.lockstep.runs[0].missing_in_candidate == 20);

  auto shorter_baseline = baseline;
  shorter_baseline.resize(45);
  both = compare_both(shorter_baseline, candidate);
  CHECK(both.lockstep.runs[0].compared_in_lockstep == 45);
  CHECK(both.lockstep.runs[0].missing_in_baseline == 15);

  // A baseline that cycled its source (source ids 0, 1, 0, 1, ...) against the source trace
  // itself: the candidate's id pairs with the first copy only, so the lockstep stops at the first
  // repeated source.
  // A copy carries its source's request (and key): the ids' pairs then agree with the keys.
  auto cycled = baseline;
  for (std::size_t i = 0; i < cycled.size(); ++i) cycled[i].source_id = i % 30, cycled[i].key = baseline[i % 30].key;
  auto source = candidate;
  for (std::size_t i = 0; i < source.size(); ++i) source[i].id = i;
  both = compare_both(cycled, source);
  CHECK(both.lockstep.runs[0].alignment == Alignment::id_to_source);
  CHECK(both.lockstep.runs[0].compared_in_lockstep == 30);
  CHECK(both.lockstep.runs[0].aligned == 30);

  both = compare_both({}, candidate);
  CHECK(both.lockstep.runs[0].compared_in_lockstep == 0);
  both = compare_both(baseline, {});
  CHECK(both.lockstep.runs[0].missing_in_candidate == 60);
}

TEST_CASE("Random reorders and a tiny memory budget after the break give the passes' result") {
  for (unsigned seed = 0; seed < 20; ++seed) {
    std::mt19937 rng(seed);
    auto baseline = baseline_trace(rng, 80);
    auto candidate = replay_of(rng, baseline);
    std::size_t from = rng() % 80, to = std::min<std::size_t>(80, from + rng() % 10);
    std::shuffle(candidate.begin() + from, candidate.begin() + to, rng);
    std::size_t in_order = from;
    if (seed % 3 == 0) {
      std::size_t erased = rng() % candidate.size();
      candidate.erase(candidate.begin() + erased);
      in_order = std::min(in_order, erased);
    }
    Options tight;
    tight.memory_budget = seed % 2 ? 1 : Options{}.memory_budget;
    INFO("seed " << seed);
    auto both = compare_both(baseline, candidate, tight);
    CHECK(both.lockstep.runs[0].compared_in_lockstep >= in_order);
  }
}

TEST_CASE("Trace files are read once each in lockstep - with the passes' result") {
  std::mt19937 rng(21);
  auto baseline = baseline_trace(rng, 150);
  auto candidate = replay_of(rng, baseline);
  std::swap(candidate[90], candidate[91]);
  TempDir dir;
  auto write = [&](const std::filesystem::path& path, const std::vector<Exchange>& exchanges) {
    TraceWriter writer(path, TraceHeader{}, WriterOptions{.flush_every = 16});
    for (const auto& exchange : exchanges) writer.write(exchange);
    writer.close();
  };
  write(dir / "baseline.rtrace", baseline);
  write(dir / "candidate.rtrace", candidate);
  Options options, in_passes;
  in_passes.lockstep = false;
  auto lockstep = compare_files(dir / "baseline.rtrace", {dir / "candidate.rtrace"}, options);
  auto passes = compare_files(dir / "baseline.rtrace", {dir / "candidate.rtrace"}, in_passes);
  CHECK(lockstep.runs[0].compared_in_lockstep == 90);
  CHECK(lockstep.runs[0].divergent > 5);
  check_same_result(lockstep, passes);
  // Both ways again with every exchange read whole (Options::outputs_only off): the same result.
  options.outputs_only = in_passes.outputs_only = false;
  check_same_result(compare_files(dir / "baseline.rtrace", {dir / "candidate.rtrace"}, options), lockstep);
  check_same_result(compare_files(dir / "baseline.rtrace", {dir / "candidate.rtrace"}, in_passes), passes);
}

TEST_CASE("Trace files read for their outputs only give the whole reads' result - expected answers and a tight memory budget included") {
  std::mt19937 rng(23);
  auto baseline = baseline_trace(rng, 160);
  auto candidate = replay_of(rng, baseline);
  std::swap(candidate[70], candidate[71]);
  for (std::size_t i = 0; i < candidate.size(); i += 5) candidate[i].request.body = "{\"prompt\":\"long\"}";
  TempDir dir;
  for (const auto& [name, exchanges] : {std::pair{"baseline.rtrace", &baseline}, {"candidate.rtrace", &candidate}}) {
    TraceWriter writer(dir / name, TraceHeader{}, WriterOptions{.flush_every = 8});
    for (const auto& exchange : *exchanges) writer.write(exchange);
    writer.close();
  }
  for (bool lockstep : {true, false}) {
    for (std::size_t budget : {std::size_t(256) << 20, std::size_t(2000)}) {
      Options outputs_only;
      outputs_only.expect = true;
      outputs_only.match = Match::contains;
      outputs_only.lockstep = lockstep;
      outputs_only.memory_budget = budget;  // 2000 bytes: the divergent exchanges read again in batches
      Options whole = outputs_only;
      whole.outputs_only = false;
      auto a = compare_files(dir / "baseline.rtrace", {dir / "candidate.rtrace"}, outputs_only);
      auto b = compare_files(dir / "baseline.rtrace", {dir / "candidate.rtrace"}, whole);
      CHECK(a.runs[0].compared_in_lockstep == (lockstep ? 70u : 0u));
      CHECK(a.runs[0].divergent > 5);
      CHECK(*a.runs[0].with_expected > 0);
      check_same_result(a, b);
    }
  }
}

TEST_CASE("A torn candidate file is compared up to the tear in lockstep - with the passes' warning") {
  std::mt19937 rng(22);
  auto baseline = baseline_trace(rng, 120);
  auto candidate = replay_of(rng, baseline);
  TempDir dir;
  for (const auto& [name, exchanges] : {std::pair{"baseline.rtrace", &baseline}, {"candidate.rtrace", &candidate}}) {
    TraceWriter writer(dir / name, TraceHeader{}, WriterOptions{.flush_every = 16});
    for (const auto& exchange : *exchanges) writer.write(exchange);
    writer.close();
  }
  // Cut the candidate in its middle frames, as a crash mid-write would.
  std::filesystem::resize_file(dir / "candidate.rtrace", std::filesystem::file_size(dir / "candidate.rtrace") / 2);
  Options options, in_passes;
  in_passes.lockstep = false;
  auto lockstep = compare_files(dir / "baseline.rtrace", {dir / "candidate.rtrace"}, options);
  auto passes = compare_files(dir / "baseline.rtrace", {dir / "candidate.rtrace"}, in_passes);
  REQUIRE(lockstep.warnings.size() == 1);
  CHECK(lockstep.warnings[0].find("candidate.rtrace") != std::string::npos);
  CHECK(lockstep.runs[0].missing_in_candidate > 0);
  CHECK(lockstep.runs[0].compared_in_lockstep == lockstep.runs[0].exchanges);
  check_same_result(lockstep, passes);
  options.outputs_only = false;
  check_same_result(compare_files(dir / "baseline.rtrace", {dir / "candidate.rtrace"}, options), lockstep);
}
