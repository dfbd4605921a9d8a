#include "replay/flags.hpp"

#include <cstdlib>
#include <stdexcept>

namespace retrace::replay {

std::chrono::milliseconds parse_timeout(std::string_view text) {
  auto timeout = std::chrono::duration_cast<std::chrono::milliseconds>(parse_duration(text, "--timeout"));
  if (timeout.count() <= 0)
    throw std::invalid_argument("--timeout " + std::string(text) + ": must be at least 1ms");
  return timeout;
}

void apply_request_flags(const RequestFlags& flags, Options& options) {
  for (const auto& assignment : flags.set)
    options.set.push_back(split_assignment(assignment, "--set"));
  options.unset = flags.unset;
  for (const auto& header : flags.headers) options.headers.push_back(parse_header(header));
  auto token_ids = llm::token_id_mode_from_string(flags.token_ids);
  if (!token_ids)
    throw std::invalid_argument("--token-ids " + flags.token_ids +
                                ": expected vllm, llamacpp, logprobs or off");
  options.token_ids = *token_ids;
  if (!flags.api_key_env.empty()) {
    const char* key = std::getenv(flags.api_key_env.c_str());
    if (!key || !*key)
      throw std::invalid_argument("--api-key-env " + flags.api_key_env +
                                  ": that environment variable is not set or empty (export it, "
                                  "or drop the flag)");
    options.api_key = key;
    options.api_key_env = flags.api_key_env;
  }
  options.timeout = parse_timeout(flags.timeout);
  // --set stream=... has the last word, as it is applied last; it then also decides
  // stream_options, which a server refuses on a request that does not stream.
  options.stream = !flags.no_stream;
  for (const auto& [path, value] : options.set)
    if (path == "stream") options.stream = value == "true";
  for (const auto& label : flags.labels) {
    auto [key, value] = split_assignment(label, "--label");
    options.labels.push_back({key, value});
  }
  options.limit = flags.limit;
  options.warmup = flags.warmup;
  for (const auto& filter : flags.filters) validate_filter(filter);
  options.filters = flags.filters;
  options.ca_file = flags.ca_file;
  options.insecure = flags.insecure;
  options.threads = flags.threads;
}

}  // namespace retrace::replay
