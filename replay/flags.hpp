// The request flags `replay`, `sweep` and `bisect` share, as the user typed them: one definition,
// one validation, one conversion into replay::Options. Sweep keeps them in this form in its
// plan.json (a resumed sweep re-validates them, and secrets stay out of the file).
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "replay/replay.hpp"

namespace retrace::replay {

struct RequestFlags {
  std::vector<std::string> set;      // --set PATH=VALUE
  std::vector<std::string> unset;    // --unset PATH
  std::vector<std::string> headers;  // --header 'Name: value'
  std::string token_ids = "auto";    // --token-ids auto|vllm|llamacpp|logprobs|off
  std::string model;                 // --model NAME: every inference request's model ("" = keep)
  double max_error_rate = 0;         // --max-error-rate R: failed fraction tolerated (exit codes)
  std::string api_key_env;           // --api-key-env VAR: the variable's name, never its value
  std::vector<std::string> set_secrets;  // --set-secret FIELD=ENV: names only, never the values
  std::string timeout = "120s";      // --timeout, with a unit: idle (no byte for this long)
  std::string request_deadline;      // --request-deadline DURATION ("" = none): send to last byte
  std::size_t max_response_bytes = net::kDefaultMaxResponseBytes;  // --max-response-bytes N
  bool no_stream = false;            // --no-stream
  std::vector<std::string> labels;   // --label KEY=VALUE
  std::optional<std::size_t> limit;  // --limit N
  std::uint64_t seed = 1;            // --seed: arrivals and --sample-sessions
  std::string window_from, window_to;  // --window-from/--window-to DURATION ("" = open)
  std::string max_idle_gap;          // --max-idle-gap DURATION ("" = none)
  std::optional<double> sample_sessions;  // --sample-sessions F
  std::optional<std::size_t> requests;    // --requests N
  std::string duration;              // --duration DURATION ("" = none)
  std::size_t warmup = 0;            // --warmup N
  std::vector<std::string> filters;  // --filter path:GLOB | label:K=GLOB | session:GLOB
  std::string ca_file;               // --ca-file PEM
  bool insecure = false;             // --insecure
  unsigned threads = 0;              // --threads (0: one per core)
  std::string scrape_interval = "250ms";  // --scrape-interval: the target's /metrics, this often
  std::string scrape_url;            // --scrape-url URL: a metrics page of its own ("" = TARGET/metrics)
  bool no_scrape = false;            // --no-scrape
  bool derive_tokens = false;        // --derive-tokens: the run's trace written with format 1.7's derived tokens
};

// The schedule flags `replay` and `sweep` share (bisect's axis is concurrency only): one set of
// bounds for --rate and --speed, one rule for --arrival with --burstiness.
struct ScheduleFlags {
  std::optional<std::string> arrival;  // --arrival poisson|constant|gamma (default poisson; gamma
                                       // when only --burstiness is given, as vllm bench serve)
  std::optional<double> burstiness;    // --burstiness B: the gamma shape (1 = Poisson, < 1 burstier)
};

// The widest --rate and --speed a run takes (a capacity search doubles up to them).
inline constexpr double kMinRate = 1e-9, kMaxRate = 1e9;
inline constexpr double kMinSpeed = 1e-6, kMaxSpeed = 1e6;
// --rate R: requests per second, from kMinRate to kMaxRate. Throws std::invalid_argument naming `flag`.
double parse_rate(std::string_view text, std::string_view flag = "--rate");
// --speed S from 1e-6 to 1e6 (recorded offsets divided by it stay within int64 nanoseconds).
// Returns it, or throws std::invalid_argument naming `flag`.
double check_speed(double speed, std::string_view flag = "--speed");
// A closed loop's requests in flight: 1 to kMaxInFlight (replay/replay.hpp), else
// std::invalid_argument naming `flag`.
int check_concurrency(long long concurrency, std::string_view flag = "--concurrency");
// The open loop's shape from the flags into `schedule` (arrival, burstiness); throws
// std::invalid_argument naming the flag and what to write instead.
void apply_schedule_flags(const ScheduleFlags& flags, Schedule& schedule);

// Validates the flags and sets the fields of `options` they name (the schedule, run name and
// everything else are left alone; the schedule must be set before, as the trace controls are
// checked against it). Reads the --api-key-env variable. Throws std::invalid_argument
// naming the flag and what to write instead.
void apply_request_flags(const RequestFlags& flags, Options& options);

// The one rule for "the run failed" (replay exits 1, sweep and bisect 3): more than `max_error_rate`
// of `total` requests failed. Returns the summary line saying so, or nullopt when within it.
std::optional<std::string> failure_verdict(std::size_t failed, std::size_t total, double max_error_rate);

// --timeout and --request-deadline (named by `flag`): a duration (parse_duration: "30s",
// "500ms", "2m"), at least 1ms.
std::chrono::milliseconds parse_timeout(std::string_view text, const char* flag = "--timeout");

}  // namespace retrace::replay
