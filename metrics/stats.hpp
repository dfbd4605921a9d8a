// A run's figures for any trace: Stats (throughput, TTFT, ITL, TPOT, e2e, goodput), the
// ExchangeMetrics each exchange is reduced to, the StatsBuilder that gathers them in bounded memory,
// and SLOs. Definitions are metrics/stats.cpp's opening comment.
//
// metrics/ holds: distribution (percentiles in bounded memory), stats (this file's figures),
// statistics (confidence bounds).
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "format/output_tokens.hpp"
#include "format/trace.hpp"
#include "metrics/client_usage.hpp"
#include "metrics/distribution.hpp"

namespace retrace::metrics {

struct Slo {
  std::optional<std::chrono::nanoseconds> ttft;
  std::optional<std::chrono::nanoseconds> tpot;
  std::optional<std::chrono::nanoseconds> e2e;
  // TTFT at most this many of the request's own TPOT (--slo ttft:16tpot): the time a request
  // waited before its first token, in the server's own pace, so a machine that runs faster or
  // slower moves both sides alike. Not met without a TPOT (not streamed, or one token).
  std::optional<double> ttft_tpots;
  bool any() const { return ttft || tpot || e2e || ttft_tpots; }
};
// Latency/throughput figures of one run (or of any trace: `retrace stats`); each latency
// figure's Percentiles come from a Distribution (metrics/distribution.hpp).
struct Stats {
  std::size_t exchanges = 0;  // inference requests only (see other_requests)
  std::size_t completed = 0;  // no error
  std::size_t not_sent = 0;   // neither a response nor an error: a plan, e.g. an imported trace
  // Requests that are not inference (GET /v1/models, /metrics, /health): not counted above, listed
  // by "METHOD path" with their number.
  std::vector<std::pair<std::string, std::size_t>> other_requests;
  std::vector<std::pair<std::string, std::size_t>> errors_by_kind;
  std::size_t retried = 0;    // sent again on a fresh connection (a stale keep-alive one)
  double duration_s = 0;      // first send to last end
  double requests_per_s = 0;
  double output_tokens_per_s = 0;
  std::uint64_t output_tokens = 0;  // output_tokens() summed over completed exchanges
  std::string output_tokens_source;  // OutputTokenTally::source(): "server usage", "counted", ...
  // usage.prompt_tokens summed over the completed exchanges that reported it; absent when none did.
  std::optional<std::uint64_t> input_tokens;
  double input_tokens_per_s = 0;
  double total_tokens_per_s = 0;  // (input + output) / duration
  // Requests in flight (sent, last byte not yet in), over the run: the most at one instant and the
  // time-weighted mean (sum of the exchanges' durations / the run's duration, Little's law).
  std::size_t peak_in_flight = 0;
  double mean_in_flight = 0;
  // Of output_tokens, the reasoning part's (format/output_tokens.hpp), over the completed
  // exchanges that reasoned; absent when none did.
  std::optional<std::uint64_t> reasoning_tokens;
  std::string reasoning_tokens_source;
  Percentiles ttft, itl, tpot, e2e;         // from the actual send
  // Time to first output token: as TTFT, but the first token of the answer (content, refusal or a
  // tool call), not of the reasoning; equal to TTFT for a model that does not reason.
  Percentiles ttfot;
  Percentiles ttft_intended, e2e_intended;  // from the intended send (open-loop schedules)
  Percentiles schedule_slip;                // actual - intended
  // Where the server said its own (format 1.6, ServerSaid): the client's TTFT minus the server's
  // (the network, a proxy, the server's HTTP front; 0 when the server's is the larger), and its
  // queue time as a share of the client's TTFT, in percent (held in Percentiles' fields as is).
  Percentiles ttft_minus_server, queue_share;
  bool open_loop = false;
  std::optional<double> goodput_per_s;      // requests/s meeting the SLO, where one is given
  std::optional<std::size_t> slo_met;
  std::optional<ClientUsage> client;        // the client's own CPU, for a replayed run
};

// What the statistics need of one exchange; small, so a run keeps one per exchange in memory
// while the exchanges themselves stream to disk.
struct ExchangeMetrics {
  ErrorKind error = ErrorKind::none;
  bool streamed = false;
  bool retried = false;
  std::int64_t intended_send_ns = 0;
  std::int64_t actual_send_ns = 0;
  std::int64_t first_token_ns = -1;  // from the send; -1 when no token arrived
  std::int64_t first_output_token_ns = -1;  // the same, reasoning tokens left out
  std::int64_t end_ns = -1;          // from the send
  OutputTokens output_tokens;        // usage.completion_tokens, else decoded tokens
  std::optional<OutputTokens> reasoning_tokens;  // of them, the reasoning's; nullopt: none
  std::int64_t input_tokens = -1;    // usage.prompt_tokens; -1 when the server did not say
  bool inference = true;             // llm::is_inference_request
  bool sent = true;                  // has a response or an error
  std::string endpoint;              // "METHOD path" when not inference
  std::vector<std::int64_t> token_gaps_ns;  // between successive token-carrying events (choice 0)
  double server_ttft_ms = -1, server_queue_ms = -1;  // what the server said; -1 not said
};
ExchangeMetrics summarize(const Exchange& exchange);
// TTFT in ns by the definition above; absent for a non-streamed response or one without a token.
std::optional<std::int64_t> ttft_of(const ExchangeMetrics& metrics);
// TTFOT in ns: TTFT without the reasoning tokens; absent as TTFT is, or without an output token.
std::optional<std::int64_t> ttfot_of(const ExchangeMetrics& metrics);
// TPOT in ns by the definition above; absent for a non-streamed response or one token or fewer.
std::optional<double> tpot_of(const ExchangeMetrics& metrics);


// A run's figures, gathered one exchange at a time in memory that does not grow with tokens:
// add() counts an exchange and puts the latencies that do not depend on when it was sent (TTFT,
// ITL, TPOT, e2e) into their distributions (metrics/distribution.hpp); it keeps only what the
// others need (64 bytes: its offsets, end, TTFT and TPOT), for finish(): offsets derived from
// wall-clock starts for traces that have none, schedule slip and the intended latencies, requests
// in flight, SLOs.
class StatsBuilder {
 public:
  explicit StatsBuilder(bool open_loop, Slo slo = {}) : open_loop_(open_loop), slo_(std::move(slo)) {}
  void reserve(std::size_t exchanges) { kept_.reserve(exchanges); }
  // `start_unix_ns`: the exchange's wall-clock start, from which send offsets are derived when no
  // exchange has one (traces of some recorders and imports).
  void add(ExchangeMetrics metrics, std::int64_t start_unix_ns = 0);
  // As add(summarize(exchange), start_unix_ns), its inter-token gaps read from its tokens straight
  // into the ITL distribution rather than listed first (a replay adds each exchange so, with 0).
  void add(const Exchange& exchange, std::int64_t start_unix_ns);
  void add(const Exchange& exchange) { add(exchange, exchange.start_unix_ns); }
  Stats finish() &&;

 private:
  struct Kept {  // an inference exchange, for finish()
    std::int64_t actual_send_ns, intended_send_ns, start_unix_ns;
    std::int64_t end_ns;   // from the send; -1 without an end
    std::int64_t ttft_ns;  // ttft_of; -1 without one
    double tpot_ns;        // tpot_of; -1 without one
    bool sent, completed;
  };
  // `gaps_of`: the exchange whose gaps to add instead of m.token_gaps_ns, when not null.
  void add(const ExchangeMetrics& m, std::int64_t start_unix_ns, const Exchange* gaps_of);
  bool open_loop_;
  Slo slo_;
  Stats stats_;  // the counts, as add() goes
  std::map<ErrorKind, std::size_t> errors_;
  std::map<std::string, std::size_t> other_requests_;
  OutputTokenTally tokens_, reasoning_;
  Distribution ttft_, ttfot_, itl_, tpot_, e2e_, ttft_minus_server_, queue_share_;
  std::vector<Kept> kept_;
  std::size_t added_ = 0;
  bool any_offset_ = false;
  std::int64_t first_start_ = std::numeric_limits<std::int64_t>::max();
};

// Open loop (rate or recorded timing) is read from the header's settings (metrics/run_settings.hpp).
Stats compute_stats(const TraceHeader& header, const std::vector<Exchange>& exchanges,
                    const Slo& slo = {});
Stats compute_stats(bool open_loop, const std::vector<ExchangeMetrics>& metrics,
                    const Slo& slo = {});
bool is_open_loop(const TraceHeader& header);
// A run's client as reports show it: its figures, and the schedule slip's p99 where the slip is
// known (an open-loop run with sent requests).
RunClient client_of(const Stats& stats);
// Streams a trace file (one ExchangeMetrics per exchange, without its token gaps) into its figures.
// Throws TraceError when it is not a readable trace; a torn tail is reported through `recovery`.
Stats stats_of_trace(const std::filesystem::path& path, const Slo& slo = {},
                     Recovery* recovery = nullptr);

}  // namespace retrace::metrics

namespace retrace::replay {
// The names replay has always had (callers on other branches still say replay::Stats).
using metrics::compute_stats;
using metrics::ExchangeMetrics;
using metrics::is_open_loop;
using metrics::Slo;
using metrics::Stats;
using metrics::StatsBuilder;
using metrics::stats_of_trace;
using metrics::summarize;
using metrics::tpot_of;
using metrics::ttfot_of;
using metrics::ttft_of;
}  // namespace retrace::replay
