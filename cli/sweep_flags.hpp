// The replay flags `sweep` and `bisect` share (they replay like `retrace replay` does).
#pragma once

#include <CLI/CLI.hpp>

#include <memory>

#include "sweep/sweep.hpp"

namespace retrace::cli {

inline void add_replay_flags(CLI::App& command, sweep::ReplayArgs& args,
                             std::shared_ptr<std::size_t> limit) {
  command.add_option("--set", args.set, "Override a request body field: PATH=VALUE (JSON or string)")
      ->type_name("PATH=VALUE");
  command.add_option("--unset", args.unset, "Remove a request body field")->type_name("PATH");
  command.add_option("--header,-H", args.headers, "Add a header to every request: 'Name: value'");
  command.add_option("--token-ids", args.token_ids,
                     "Ask the server for token ids: vllm, llamacpp, logprobs or off")
      ->capture_default_str();
  command.add_option("--api-key-env", args.api_key_env,
                     "Environment variable holding an API key (sent as a Bearer token, never written)");
  command.add_option_function<std::string>(
             "--timeout",
             [&args](const std::string& text) {
               try {
                 args.timeout_s = sweep::parse_duration_seconds(text);
               } catch (const std::invalid_argument& error) {
                 throw CLI::ValidationError("--timeout", error.what());
               }
             },
             "Per-request timeout, e.g. 30s, 500ms (default 120s)")
      ->type_name("DURATION");
  command.add_option("--label", args.labels, "A KEY=VALUE label on every run");
  command.add_option("--limit", *limit, "Replay only the first N requests");
  command.add_option("--warmup", args.warmup, "Send the first N requests without counting them");
  command.add_option("--filter", args.filters, "Only requests matching path:GLOB or label:k=v");
  command.add_option("--ca-file", args.ca_file, "CA bundle for https targets");
  command.add_flag("--insecure", args.insecure, "Do not verify TLS certificates");
  command.add_option("--threads", args.threads, "Replay worker threads (0: one per core)");
}

// CLI11 has no optional<size_t> here; --limit's presence decides.
inline void apply_limit(CLI::App& command, sweep::ReplayArgs& args, std::size_t limit) {
  if (command.count("--limit") > 0) args.limit = limit;
}

}  // namespace retrace::cli
