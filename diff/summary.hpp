// Internal to diff/: the small per-exchange summary the engine keeps (ids, alignment keys, per-choice
// xxh3 of the ids and of the bytes, error, expected answer), and the alignment keys built from it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <xxhash.h>

#include "diff/diff.hpp"

namespace retrace::diff {

inline constexpr std::size_t kNone = static_cast<std::size_t>(-1);

struct ChoiceDigest {
  std::uint64_t byte_hash = 0;
  std::uint64_t id_hash = 0;
  bool ids = false;
};

struct Summary {
  std::uint64_t id = 0;
  std::optional<std::uint64_t> source_id;
  RequestKey key;
  std::uint32_t occurrence = 0;
  // How many earlier exchanges of this trace re-issued the same source: a run that cycles a short
  // trace (replay --requests N) sends each source several times.
  std::uint32_t source_occurrence = 0;
  std::vector<ChoiceDigest> choices;
  std::uint64_t completion_hash = 0;  // all choices' bytes: what "same completion" means N-way
  bool failed = false;
  std::string error;  // "kind: message" when failed
  std::string not_compared;  // why, when the exchange has no output to compare (diff.hpp)
  std::optional<std::string> expected;  // kept only with Options::expect
  std::optional<bool> matches_expected;
  std::int32_t in_flight_at_send = -1;  // the exchange's (format 1.5), -1 when not known
  std::int64_t cached_tokens = -1;      // the exchange's (format 1.6), -1 when not known
  double preemptions = -1;              // likewise
};

struct KeyHash {
  std::size_t operator()(const RequestKey& key) const { return key.hi ^ (key.lo * 0x9E3779B97F4A7C15ull); }
};

// Alignment key: an id (source or own), or request key plus occurrence number.
struct AlignKey {
  std::uint64_t a = 0, b = 0;
  std::uint32_t c = 0;
  bool operator==(const AlignKey&) const = default;
};
struct AlignKeyHash {
  std::size_t operator()(const AlignKey& key) const {
    return key.a * 0x9E3779B97F4A7C15ull ^ key.b ^ (std::uint64_t(key.c) << 32 | key.c);
  }
};

// Builds the summaries of one trace, in file order (the occurrence numbers count earlier
// exchanges), from each exchange's outputs.
class Summarizer {
 public:
  explicit Summarizer(const Options& options) : options_(options) {}
  void summarize(const ExchangeOutputs& exchange, const std::string* fallback_expected, Summary& out);
  // Forgets the exchanges summarized so far: the next one is the first again.
  void restart();

 private:
  struct StateDeleter {
    void operator()(XXH3_state_t* state) const { XXH3_freeState(state); }
  };
  const Options& options_;
  std::unordered_map<RequestKey, std::uint32_t, KeyHash> occurrences_;
  std::unordered_map<std::uint64_t, std::uint32_t> source_occurrences_;
  std::unique_ptr<XXH3_state_t, StateDeleter> state_{XXH3_createState()};
};

// Whether two summaries' outputs hash the same (ids where both sides have them, else bytes).
bool same_output(const Summary& baseline, const Summary& candidate);

// How a run pairs with the baseline, from each trace's first exchange (see diff.hpp).
Alignment choose_alignment(bool baseline_has_sources, bool candidate_has_sources);
AlignKey baseline_key(const Summary& summary, Alignment alignment);
// (request key, occurrence) in 64 bits: what the alignment check looks up in the baseline.
std::uint64_t key_occurrence_hash(const Summary& summary);
std::optional<AlignKey> candidate_key(const Summary& summary, Alignment alignment);

// The baseline's alignment keys per alignment mode, each built on first use and extended as the
// baseline's summaries grow; a key maps to its first occurrence.
class BaselineIndex {
 public:
  using Map = std::unordered_map<AlignKey, std::size_t, AlignKeyHash>;
  // The map for `alignment` over base[0, base.size()).
  const Map& map(Alignment alignment, const std::vector<Summary>& base);

 private:
  struct Built {
    Map map;
    std::size_t indexed = 0;
  };
  std::unordered_map<int, Built> maps_;
};

}  // namespace retrace::diff
