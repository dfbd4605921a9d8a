#include "replay/flags.hpp"

#include <cstdio>
#include <cstdlib>
#include <stdexcept>

namespace retrace::replay {

double parse_rate(std::string_view text, std::string_view flag) {
  const std::string typed(text);
  char* end = nullptr;
  const double rate = std::strtod(typed.c_str(), &end);
  if (end == typed.c_str() || *end != '\0' || !(rate >= 1e-9 && rate <= 1e9))
    throw std::invalid_argument(std::string(flag) + ": '" + typed +
                                "' is not requests per second from 0.000000001 to 1000000000 (e.g. 5 or 0.5)");
  return rate;
}

double check_speed(double speed, std::string_view flag) {
  if (!(speed >= 1e-6 && speed <= 1e6))
    throw std::invalid_argument(std::string(flag) + " must be between 0.000001 and 1000000 (2 = twice as fast)");
  return speed;
}

void apply_schedule_flags(const ScheduleFlags& flags, Schedule& schedule) {
  // vllm bench serve draws gamma arrivals whose shape is --burstiness; alone, it selects them.
  auto arrival = arrival_from_string(flags.arrival.value_or(flags.burstiness ? "gamma" : "poisson"));
  if (!arrival) throw std::invalid_argument("--arrival must be poisson, constant or gamma");
  if (flags.burstiness && *arrival != Arrival::gamma)
    throw std::invalid_argument("--burstiness is the shape of gamma arrivals; drop --arrival " +
                                *flags.arrival + " or write --arrival gamma");
  const double burstiness = flags.burstiness.value_or(1);
  if (!(burstiness > 0)) throw std::invalid_argument("--burstiness must be above 0");
  schedule.arrival = *arrival;
  schedule.burstiness = burstiness;
}

std::chrono::milliseconds parse_timeout(std::string_view text, const char* flag) {
  auto timeout = std::chrono::duration_cast<std::chrono::milliseconds>(parse_duration(text, flag));
  if (timeout.count() <= 0)
    throw std::invalid_argument(std::string(flag) + " " + std::string(text) + ": must be at least 1ms");
  return timeout;
}

std::optional<std::string> failure_verdict(std::size_t failed, std::size_t total,
                                           double max_error_rate) {
  if (failed == 0 || total == 0) return std::nullopt;
  double rate = static_cast<double>(failed) / static_cast<double>(total);
  if (rate <= max_error_rate) return std::nullopt;
  char line[200];
  std::snprintf(line, sizeof line, "%zu of %zu requests failed (%.1f %%), above --max-error-rate %g",
                failed, total, 100 * rate, max_error_rate);
  return std::string(line);
}

void apply_request_flags(const RequestFlags& flags, Options& options) {
  for (const auto& assignment : flags.set)
    options.set.push_back(split_assignment(assignment, "--set"));
  options.unset = flags.unset;
  for (const auto& header : flags.headers) options.headers.push_back(parse_header(header));
  if (flags.token_ids == "auto") {
    options.token_ids = std::nullopt;
  } else {
    auto token_ids = llm::token_id_mode_from_string(flags.token_ids);
    if (!token_ids)
      throw std::invalid_argument("--token-ids " + flags.token_ids +
                                  ": expected auto, vllm, llamacpp, logprobs or off");
    options.token_ids = *token_ids;
  }
  if (!flags.model.empty()) options.model = flags.model;
  if (!(flags.max_error_rate >= 0 && flags.max_error_rate <= 1))
    throw std::invalid_argument("--max-error-rate must be a fraction from 0 to 1, e.g. 0.05 for 5 %");
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
  options.request_deadline = std::nullopt;
  if (!flags.request_deadline.empty())
    options.request_deadline = parse_timeout(flags.request_deadline, "--request-deadline");
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
  options.seed = flags.seed;
  auto duration = [](const std::string& text, const char* flag) -> std::optional<std::chrono::nanoseconds> {
    if (text.empty()) return std::nullopt;
    return parse_duration(text, flag);
  };
  options.window_from = duration(flags.window_from, "--window-from");
  options.window_to = duration(flags.window_to, "--window-to");
  options.max_idle_gap = duration(flags.max_idle_gap, "--max-idle-gap");
  options.sample_sessions = flags.sample_sessions;
  options.requests = flags.requests;
  options.duration = duration(flags.duration, "--duration");
  options.warmup = flags.warmup;
  for (const auto& filter : flags.filters) validate_filter(filter);
  options.filters = flags.filters;
  options.ca_file = flags.ca_file;
  options.insecure = flags.insecure;
  options.threads = flags.threads;
  validate_trace_controls(options);  // against the schedule the caller set before
}

}  // namespace retrace::replay
