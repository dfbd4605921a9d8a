// Internal to replay/: a run planned from one streamed pass over its input. Sessions, recorded
// timing and a time window need the whole trace's sessions and clock before the first request,
// but not its bodies: the pass keeps of each exchange what selection and the schedule read (a
// Candidate: whether it may be sent, its id, session and send times) and where its record is (a
// RecordPosition), and lays the chains out from those alone, with the loaded run's own rules
// (select_candidates, make_chains). The bodies stay in the file: the run's feed
// (replay/feed.hpp) reads each chain's requests from their positions when the chain is next.
//
// What a plan holds: each exchange's candidate, position and model index, each session id once,
// and each chosen request's send and place in a chain: ~300 bytes an input exchange with the
// run's figures (bench/RESULTS.md, "Planned runs"); never a body. A time window's run reads the
// trace once more first (learn()): the whole trace's clock and each session's first send, so the
// pass that plans keeps only the exchanges of the window (and of the sessions starting in it) and
// reads past the rest: its plan grows with the window, not with the trace.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <unordered_set>
#include <vector>

#include "replay/prepare.hpp"

namespace retrace::replay {

struct Plan {
  std::unordered_set<std::string> session_ids;  // each once; the candidates' sessions view them
  std::vector<Candidate> candidates;  // every exchange planned (read, or in the window), in input order
  std::optional<LeftOut> left_out;    // a window's run: the exchanges read past
  std::vector<RecordPosition> at;               // where each one's record is
  // The sends, in selection order (cycled by --requests); only input_index and cycle are set.
  std::vector<Prepared> sends;
  std::vector<Chain> chains;  // items index `sends`, in the order they start
  std::size_t selected = 0;   // chosen before --requests cycled them
  // The first `count` sends (cycling) as one-request chains: --warmup's.
  std::vector<Chain> warmup(std::size_t count) const;
};

// What one pass over the input gathers for a planned run; the pass itself is scan_input's
// (replay/feed.hpp), which calls add() for each exchange it reads and finish() at the end.
class Planner {
 public:
  explicit Planner(const Options& options) : options_(options), plan_(std::make_shared<Plan>()) {}
  // Whether the run is a time window's, which reads the input twice: learn() each exchange of a
  // first pass, then offer each of the second to in_window(), add() those it keeps, leave_out()
  // the others.
  bool windowed() const { return options_.window_from || options_.window_to; }
  void learn(const Exchange& exchange);
  bool in_window(const Exchange& exchange) const;
  void leave_out(const Exchange& exchange);
  // One exchange, read at `at`, in input order; `model` its ModelReader answer.
  void add(const Exchange& exchange, RecordPosition at, const std::optional<std::string>& model);
  // The selection and the chains (throws std::invalid_argument for a schedule that cannot be laid
  // out), and the models the chosen requests name, into `models`.
  std::shared_ptr<const Plan> finish(std::set<std::string>& models) &&;

 private:
  const Options& options_;
  std::shared_ptr<Plan> plan_;
  std::vector<std::uint32_t> model_of_;  // per exchange: 0 none, else 1 + its index in models_
  std::vector<std::string> models_;
  std::map<std::size_t, std::string> refused_;  // exchanges method_of refuses: why
  // A window's first pass: each session's earliest recorded offset and start (the trace's clock
  // is only known after the pass, so both are kept; TraceClock::offset chooses).
  std::unordered_map<std::string, std::pair<std::int64_t, std::int64_t>> session_first_;
  LeftOut left_out_;
};

}  // namespace retrace::replay
