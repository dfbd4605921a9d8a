// A replayed run's settings: what its trace header's "settings" JSON says, as one struct, written
// by replay (replay/run_settings.cpp from its Options, replay/shard.cpp's facts of a sharded run,
// the client's CPU at the end) and by merge, and read by merge, `stats`, `report` and `sweep`. Every
// writer and reader goes through to_json and parse_run_settings below; nobody reads a key by name.
//
// The JSON keys are the members' names (Boost.Describe), in this order. Evolution: a member may
// be added, never renamed or retyped. A header is read tolerantly (base/described_json.hpp): a
// key that is missing, null or of another type leaves its member at its default, and a key not
// named here is ignored, so traces written by older replays still read, and older retraces read
// newer traces. An empty std::optional is a key left out, which is how a flag not given shows.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/describe/class.hpp>
#include <boost/json/fwd.hpp>

#include "metrics/client_usage.hpp"

namespace retrace::metrics {

struct ScheduleSettings {
  std::string kind;  // "concurrency", "rate" or "recorded"
  std::optional<int> concurrency;  // closed loop: requests in flight (a merged run: all shards')
  std::optional<double> rate;      // open loop: requests (or sessions) per second, all shards'
  std::optional<std::string> arrival;
  std::optional<double> burstiness;
  std::optional<std::uint64_t> seed;  // the arrival process's
  std::optional<double> speed;        // recorded timing: 2 = twice as fast
  std::optional<int> concurrency_per_shard;  // a merged run: each shard's -c
  // Written by replays before #29 (1 under --rate and --timing recorded); read so that their
  // shards still merge as they did.
  std::optional<std::int64_t> max_in_flight, max_in_flight_per_shard;

  bool open_loop() const { return kind == "rate" || kind == "recorded"; }
  friend bool operator==(const ScheduleSettings&, const ScheduleSettings&) = default;
};
BOOST_DESCRIBE_STRUCT(ScheduleSettings, (),
                      (kind, concurrency, rate, arrival, burstiness, seed, speed, concurrency_per_shard,
                       max_in_flight, max_in_flight_per_shard))

struct SloSettings {
  std::optional<double> ttft_ms, tpot_ms, e2e_ms;
  std::optional<double> ttft_tpots;  // --slo ttft:16tpot (metrics::Slo::ttft_tpots)
  friend bool operator==(const SloSettings&, const SloSettings&) = default;
};
BOOST_DESCRIBE_STRUCT(SloSettings, (), (ttft_ms, tpot_ms, e2e_ms, ttft_tpots))

// The trace a sharded run replayed (replay/shard.hpp): shards of one trace agree on it.
struct TraceIdentity {
  std::uint64_t exchanges = 0;
  std::int64_t created_unix_ns = 0;
  std::string digest;  // 16 hex digits over every request key in order, and the count
  friend bool operator==(const TraceIdentity&, const TraceIdentity&) = default;
};
BOOST_DESCRIBE_STRUCT(TraceIdentity, (), (exchanges, created_unix_ns, digest))

// One shard of a merged run, as the merged header lists it under "shards".
struct ShardFact {
  std::size_t index = 0;
  std::string file;
  std::string host;
  std::optional<std::string> start_at;  // RFC 3339; absent when the shard had no --start-at
  std::optional<std::int64_t> clock_offset_ns;
  std::uint64_t selected = 0;
  std::optional<ClientUsage> client;
  friend bool operator==(const ShardFact&, const ShardFact&) = default;
};
BOOST_DESCRIBE_STRUCT(ShardFact, (), (index, file, host, start_at, clock_offset_ns, selected, client))

// A live-session run's tool turns (replay/replay.hpp, substitute_session_answers), counted at its
// end: how many carried this run's calls and how many were kept as recorded, under `rule`.
struct LiveToolTurns {
  std::string rule;
  std::uint64_t substituted = 0;
  std::uint64_t kept_as_recorded = 0;
  friend bool operator==(const LiveToolTurns&, const LiveToolTurns&) = default;
};
BOOST_DESCRIBE_STRUCT(LiveToolTurns, (), (rule, substituted, kept_as_recorded))

struct RunSettings {
  std::string command;  // "replay"
  std::optional<std::string> input;  // the input trace as named ("trace" in reports)
  std::string target;
  std::optional<ScheduleSettings> schedule;
  bool sessions = false;
  std::string session_mode;  // "recorded" or "live"
  std::uint64_t warmup = 0;
  std::optional<std::uint64_t> limit;
  std::optional<std::uint64_t> skipped_rejected;
  // The trace controls (replay/select.cpp).
  std::optional<double> window_from_ms, window_to_ms, max_idle_gap_ms;
  std::optional<double> sample_sessions;
  std::optional<std::uint64_t> sample_seed;
  std::optional<std::uint64_t> requests;
  // A time-limited run: no request was sent later than this after the start; in-flight ones ended.
  std::optional<double> duration_ms;
  std::vector<std::string> filters;
  std::map<std::string, std::string> set;  // body path = value as given
  std::vector<std::string> unset;
  std::vector<std::string> headers;  // "Name: value", a secret header's value redacted
  std::optional<std::string> api_key_env;
  std::string token_ids;  // "off", "on", ... or "auto"
  std::optional<std::string> model;
  std::int64_t timeout_ms = 0;  // idle: no byte for this long
  std::optional<std::int64_t> request_deadline_ms;
  bool stream = true;
  std::map<std::string, std::string> labels;
  std::optional<std::string> run;
  std::optional<int> repeat;
  SloSettings slo;
  std::optional<std::string> shard;  // "I/N"
  unsigned threads = 0;
  std::optional<std::string> ca_file;
  std::optional<bool> insecure;
  std::optional<bool> derive_tokens;  // --derive-tokens (format 1.7's derived tokens); absent: off
  // A sharded (or --start-at) run's facts, what merge checks (replay/shard.hpp).
  std::optional<TraceIdentity> input_identity;
  std::optional<std::uint64_t> selected;  // a merged run: all shards'
  std::optional<std::string> host;
  std::optional<std::string> start_at;
  std::optional<std::int64_t> start_at_unix_ns;  // a merged run: the earliest shard's
  std::optional<std::int64_t> clock_offset_ns;
  // The client's own CPU over the measured run (a merged run: its busiest shard's).
  std::optional<ClientUsage> client;
  // A merged run (replay/merge.hpp): the per-shard figures its totals were summed from.
  std::optional<std::uint64_t> requests_per_shard, limit_per_shard;
  std::optional<std::vector<ShardFact>> shards;
  std::optional<std::int64_t> clock_offset_spread_ns;
  std::optional<LiveToolTurns> live_tool_turns;  // a --session-mode live run

  bool open_loop() const { return schedule && schedule->open_loop(); }
  friend bool operator==(const RunSettings&, const RunSettings&) = default;
};
BOOST_DESCRIBE_STRUCT(RunSettings, (),
                      (command, input, target, schedule, sessions, session_mode, warmup, limit,
                       skipped_rejected, window_from_ms, window_to_ms, max_idle_gap_ms, sample_sessions,
                       sample_seed, requests, duration_ms, filters, set, unset, headers, api_key_env,
                       token_ids, model, timeout_ms, request_deadline_ms, stream, labels, run, repeat, slo,
                       shard, threads, ca_file, insecure, input_identity, selected, host, start_at,
                       start_at_unix_ns, clock_offset_ns, client, requests_per_shard, limit_per_shard,
                       shards, clock_offset_spread_ns, live_tool_turns, derive_tokens))

// Boost.JSON's customisation points, so that value_from(settings) and value_to<RunSettings>(json)
// follow the rules above (value_to throws boost::system::system_error when `json` is not an object).
void tag_invoke(boost::json::value_from_tag, boost::json::value& json, const RunSettings& settings);
RunSettings tag_invoke(boost::json::value_to_tag<RunSettings>, const boost::json::value& json);

// The header's text: serialised as it always was (boost::json::serialize).
std::string to_json(const RunSettings& settings);
// A header's settings; nullopt when the text is not a JSON object. A recorded or imported trace's
// settings are objects of other keys: they read as settings with nothing set.
std::optional<RunSettings> parse_run_settings(std::string_view text);
// The same for readers that only look: nothing set when the text is not a JSON object.
RunSettings run_settings_of(std::string_view text);

}  // namespace retrace::metrics
