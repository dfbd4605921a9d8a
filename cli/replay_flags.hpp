// The request flags `replay`, `sweep` and `bisect` share, and the schedule flags of `replay` and
// `sweep` (replay/flags.hpp): one set of names, help texts and defaults.
#pragma once

#include <CLI/CLI.hpp>

#include "cli/durations.hpp"
#include "cli/outputs.hpp"
#include "replay/flags.hpp"

namespace retrace::cli {

// --arrival and --burstiness (replay::ScheduleFlags); `what` opens --arrival's help.
inline void add_schedule_flags(CLI::App& command, replay::ScheduleFlags& flags, const std::string& what) {
  command.add_option("--arrival", flags.arrival, what + ": poisson (default), constant or gamma");
  command.add_option("--burstiness", flags.burstiness,
                     "Gamma shape (1 = Poisson, < 1 burstier); alone, it selects gamma arrivals");
}

inline void add_request_flags(CLI::App& command, replay::RequestFlags& flags) {
  command.add_option("--set", flags.set, "PATH=VALUE on the JSON body, e.g. temperature=0 (repeatable)")
      ->type_name("PATH=VALUE");
  command.add_option("--unset", flags.unset, "Remove PATH from the JSON body (repeatable)")
      ->type_name("PATH");
  command.add_option("--header,-H", flags.headers, "'Name: value' added to every request (repeatable); the run's trace and outputs keep it "
                     "unless the secret policy redacts it (a secret-looking name such as Authorization or "
                     "X-Api-Key, or a value shaped like a JWT or a known key): name a credential so, or use "
                     "--api-key-env");
  command.add_option("--api-key-env", flags.api_key_env,
                     "Send 'Authorization: Bearer $VAR'; never written to the trace");
  command.add_option("--set-secret", flags.set_secrets,
                     "Send the value of $ENV where a body member named FIELD holds a secret the "
                     "recording redacted (\"[redacted]\"); the run's trace keeps it redacted "
                     "(repeatable)")
      ->type_name("FIELD=ENV");
  command.add_option("--token-ids", flags.token_ids,
                     "Ask for token ids: auto (chosen from the identified server), vllm, llamacpp, "
                     "logprobs or off")
      ->capture_default_str();
  command.add_option("--model", flags.model,
                     "Model of every request (default: the trace's, or the target's one model when "
                     "it does not serve the trace's)");
  command.add_option("--max-error-rate", flags.max_error_rate,
                     "Fraction of failed requests tolerated before the exit code says failed (0.05 "
                     "= 5 %)")
      ->capture_default_str();
  command.add_option("--timeout", flags.timeout,
                     "Give a request up after this long without progress (connecting, its first "
                     "byte, or the next byte of its answer), with a unit: 30s, 500ms, 2m")
      ->capture_default_str()
      ->type_name("DURATION")
      ->check(duration_check(std::chrono::milliseconds(1)));
  command.add_option("--request-deadline", flags.request_deadline,
                     "Give a request up this long after its send however it progresses (default: "
                     "none; a long generation takes minutes)")
      ->type_name("DURATION")
      ->check(duration_check(std::chrono::milliseconds(1)));
  command.add_option("--max-response-bytes", flags.max_response_bytes,
                     "Cut a response past this many bytes as received (a stream that never ends): "
                     "kept up to it as truncated, and the run goes on")
      ->capture_default_str()
      ->type_name("N");
  command.add_flag("--no-stream", flags.no_stream,
                   "Do not stream completions and chat (by default they stream, asking for usage)");
  command.add_option("--label", flags.labels, "KEY=VALUE on the run and every exchange (repeatable)");
  command.add_option("--warmup", flags.warmup, "Send N requests first, neither counted nor written");
  command.add_option("--limit", flags.limit, "Replay at most N exchanges");
  command.add_option("--seed", flags.seed, "Seed of the arrival process and of --sample-sessions")
      ->capture_default_str();
  // Not --from/--to: `import --from` names a trace format.
  command.add_option("--window-from", flags.window_from,
                     "Keep exchanges sent at or after this offset of the trace's own clock (a "
                     "session by its first turn); recorded timing starts here")
      ->type_name("DURATION")
      ->check(duration_check({}));
  command.add_option("--window-to", flags.window_to,
                     "Keep exchanges sent before this offset of the trace's own clock")
      ->type_name("DURATION")
      ->check(duration_check({}));
  command.add_option("--max-idle-gap", flags.max_idle_gap,
                     "Recorded timing: shorten any wait between sends longer than this to it "
                     "(applied after --speed)")
      ->type_name("DURATION")
      ->check(duration_check({}));
  command.add_option("--sample-sessions", flags.sample_sessions,
                     "Keep this fraction (0 < F <= 1) of sessions, chosen by a hash of the session "
                     "id and --seed (the same ones on every shard and repeat)")
      ->type_name("F");
  command.add_option("--requests", flags.requests,
                     "Send N requests, cycling through the selected exchanges (not with recorded "
                     "timing)");
  command.add_option("--duration", flags.duration,
                     "Send no new request after this long; those in flight finish")
      ->type_name("DURATION")
      ->check(duration_check(std::chrono::milliseconds(1)));
  command.add_option("--filter", flags.filters,
                     "path:GLOB, label:KEY=GLOB or session:GLOB (repeatable, all must match); "
                     "matching no exchange of the trace is an error (exit 2)");
  command.add_option("--threads", flags.threads, "Worker threads (default: one per core)");
  command.add_option("--ca-file", flags.ca_file, "PEM CA bundle for https targets");
  command.add_flag("--insecure", flags.insecure, "Do not verify https certificates");
  command.add_option("--scrape-interval", flags.scrape_interval,
                     "Scrape the target's Prometheus /metrics this often during the run, into the "
                     "run's trace (a baseline before the first request, one after the last; "
                     "`retrace export --metrics` prints them)")
      ->capture_default_str()
      ->type_name("DURATION")
      ->check(duration_check(std::chrono::milliseconds(10)));
  command.add_option("--scrape-url", flags.scrape_url,
                     "The metrics page's own URL, when the server serves it on a port of its own "
                     "(default: the target's /metrics)")
      ->type_name("URL");
  command.add_flag("--no-scrape", flags.no_scrape, "Do not scrape the target's /metrics during the run");
  command.add_flag("--derive-tokens", flags.derive_tokens, kDeriveTokensHelp);
}

}  // namespace retrace::cli
