// Replay: re-issue a trace's requests against a target under a schedule (closed-loop concurrency,
// open-loop rate, or the recorded timing), and write the results as a new trace.
//
// Latency is measured from the *intended* send time (what the schedule wanted; corrected for
// coordinated omission as wrk2 does) and from the actual send time; both are kept per exchange.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "format/trace.hpp"
#include "llm/llm.hpp"

namespace retrace::replay {

enum class ScheduleKind : std::uint8_t { concurrency, rate, recorded };
enum class Arrival : std::uint8_t { poisson, constant, gamma };

struct Schedule {
  ScheduleKind kind = ScheduleKind::concurrency;
  int concurrency = 1;     // closed loop: requests in flight
  double rate = 0;         // open loop: requests per second
  Arrival arrival = Arrival::poisson;
  double burstiness = 1;   // gamma shape; 1 = Poisson
  double speed = 1;        // recorded timing: 2 = twice as fast
};

struct Slo {
  std::optional<std::chrono::nanoseconds> ttft;
  std::optional<std::chrono::nanoseconds> tpot;
  std::optional<std::chrono::nanoseconds> e2e;
};
// "ttft:200ms,tpot:50ms,e2e:2s"; throws std::invalid_argument naming the bad part.
Slo parse_slo(std::string_view text);

struct Options {
  std::string target;  // base URL, e.g. http://127.0.0.1:8000
  Schedule schedule;
  bool sessions = false;       // a session's exchanges run in order, sessions concurrently
  bool live_sessions = false;  // chat turns carry this run's earlier answers
  std::size_t warmup = 0;      // first N requests sent but not counted or written
  std::optional<std::size_t> limit;
  std::vector<std::string> filters;  // "path:GLOB" or "label:k=v"
  std::vector<std::pair<std::string, std::string>> set;  // JSON body path = JSON (or string) value
  std::vector<std::string> unset;
  std::vector<HttpHeader> headers;   // added to every request (never written when secret)
  std::optional<std::string> api_key;  // sent as "Authorization: Bearer"; never written
  llm::TokenIdMode token_ids = llm::TokenIdMode::off;
  std::chrono::milliseconds timeout{120'000};
  std::vector<Label> labels;  // written to the header and every exchange
  Slo slo;
  std::size_t shard_index = 0, shard_count = 1;
  std::uint64_t seed = 1;     // arrival process
  unsigned threads = 0;       // 0 = one per core
  std::string ca_file;
  bool insecure = false;
  WriterOptions writer;
};

// Latency/throughput figures of one run (or of any trace: `retrace stats`).
struct Percentiles {
  std::size_t count = 0;
  double p50 = 0, p90 = 0, p99 = 0, max = 0, mean = 0;  // milliseconds
};

struct Stats {
  std::size_t exchanges = 0;
  std::size_t completed = 0;  // no error
  std::vector<std::pair<std::string, std::size_t>> errors_by_kind;
  double duration_s = 0;      // first send to last end
  double requests_per_s = 0;
  double output_tokens_per_s = 0;
  std::uint64_t output_tokens = 0;
  Percentiles ttft, itl, tpot, e2e;         // from the actual send
  Percentiles ttft_intended, e2e_intended;  // from the intended send (open-loop schedules)
  Percentiles schedule_slip;                // actual - intended
  bool open_loop = false;
  std::optional<double> goodput_per_s;      // requests/s meeting the SLO, where one is given
  std::optional<std::size_t> slo_met;
};

Stats compute_stats(const TraceHeader& header, const std::vector<Exchange>& exchanges,
                    const Slo& slo = {});

struct Progress {
  std::size_t done = 0, total = 0, errors = 0;
};

struct RunResult {
  std::filesystem::path out;
  Stats stats;
  bool interrupted = false;
};

// Replays `input` (a loaded trace) to `out`. Network errors are counted and recorded, never
// abort; set-up errors (bad target URL, unwritable output) throw. `stop` (may be null) is polled:
// when it turns true the run stops sending, finishes or cuts in-flight requests, and flushes.
RunResult run_replay(const LoadedTrace& input, const Options& options,
                     const std::filesystem::path& out, const std::atomic<bool>* stop = nullptr,
                     const std::function<void(const Progress&)>& on_progress = {});

}  // namespace retrace::replay
