#include "replay/flags.hpp"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "base/duration.hpp"
#include "net/http_rules.hpp"
#include "net/url.hpp"
#include "replay/secret_fill.hpp"
#include "replay/body_path.hpp"

namespace retrace::replay {

double parse_rate(std::string_view text, std::string_view flag) {
  const std::string typed(text);
  char* end = nullptr;
  const double rate = std::strtod(typed.c_str(), &end);
  if (end == typed.c_str() || *end != '\0' || !(rate >= kMinRate && rate <= kMaxRate))
    throw std::invalid_argument(std::string(flag) + ": '" + typed +
                                "' is not requests per second from 0.000000001 to 1000000000 (e.g. 5 or 0.5)");
  return rate;
}

double check_speed(double speed, std::string_view flag) {
  if (!(speed >= kMinSpeed && speed <= kMaxSpeed))
    throw std::invalid_argument(std::string(flag) + " must be between 0.000001 and 1000000 (2 = twice as fast)");
  return speed;
}

int check_concurrency(long long concurrency, std::string_view flag) {
  if (concurrency < 1) throw std::invalid_argument(std::string(flag) + " must be at least 1");
  if (concurrency > kMaxInFlight)
    throw std::invalid_argument(std::string(flag) + " " + std::to_string(concurrency) + " is above " +
                                std::to_string(kMaxInFlight) + ", the most requests a closed loop keeps in "
                                "flight (each holds a connection and its buffers, ~10 KB)");
  return static_cast<int>(concurrency);
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
  options.secret_fills.clear();
  for (const auto& assignment : flags.set_secrets) options.secret_fills.push_back(read_secret_fill(assignment));
  options.timeout = parse_timeout(flags.timeout);
  options.max_response_bytes = net::check_max_response_bytes(flags.max_response_bytes);
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
  options.scrape.enabled = !flags.no_scrape;
  options.writer.derive_tokens = flags.derive_tokens;
  options.scrape.interval = parse_timeout(flags.scrape_interval, "--scrape-interval");
  if (options.scrape.interval < std::chrono::milliseconds(10))
    throw std::invalid_argument("--scrape-interval " + flags.scrape_interval +
                                ": at least 10ms (a server's /metrics is not free to render)");
  options.scrape.url = flags.scrape_url;
  if (!flags.scrape_url.empty()) {
    try {
      (void)net::parse_url(flags.scrape_url);
    } catch (const std::exception& e) {
      throw std::invalid_argument("--scrape-url " + flags.scrape_url + ": " + e.what() +
                                  " (the page's whole URL, e.g. http://127.0.0.1:9400/metrics)");
    }
  }
  validate_trace_controls(options);  // against the schedule the caller set before
}

// The text of single flags: --slo, --shard, KEY=VALUE, --header (durations: base/duration.hpp).

Slo parse_slo(std::string_view text) {
  Slo slo;
  std::string_view rest = text;
  if (net::trim_ows(rest).empty()) throw std::invalid_argument("empty --slo: try ttft:200ms,tpot:50ms");
  while (!rest.empty()) {
    auto comma = rest.find(',');
    auto part = net::trim_ows(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    auto colon = part.find(':');
    if (colon == std::string_view::npos)
      throw std::invalid_argument("bad --slo part '" + std::string(part) +
                                  "': expected METRIC:DURATION, e.g. ttft:200ms");
    auto metric = net::trim_ows(part.substr(0, colon));
    auto value = net::trim_ows(part.substr(colon + 1));
    if (value.ends_with("tpot")) {  // relative to the request's own pace: ttft:16tpot
      auto number = value.substr(0, value.size() - 4);
      double times = 0;
      auto [end, error] = std::from_chars(number.data(), number.data() + number.size(), times);
      if (metric != "ttft" || error != std::errc() || end != number.data() + number.size() || !(times > 0) ||
          !std::isfinite(times))
        throw std::invalid_argument("bad --slo part '" + std::string(part) +
                                    "': a limit in TPOTs is a positive number of them on ttft, e.g. ttft:16tpot");
      slo.ttft_tpots = times;
      continue;
    }
    auto limit = parse_duration(value, "--slo " + std::string(metric));
    if (metric == "ttft") slo.ttft = limit;
    else if (metric == "tpot") slo.tpot = limit;
    else if (metric == "e2e") slo.e2e = limit;
    else
      throw std::invalid_argument("bad --slo metric '" + std::string(metric) +
                                  "': use ttft, tpot or e2e");
  }
  return slo;
}

std::pair<std::size_t, std::size_t> parse_shard(std::string_view text) {
  auto slash = text.find('/');
  auto bad = [&](const std::string& why) {
    return std::invalid_argument("bad --shard '" + std::string(text) + "': " + why +
                                 " (expected I/N with 0 <= I < N, e.g. 0/4)");
  };
  if (slash == std::string_view::npos) throw bad("no '/'");
  auto index = parse_index(net::trim_ows(text.substr(0, slash)));
  auto count = parse_index(net::trim_ows(text.substr(slash + 1)));
  if (!index || !count) throw bad("not two numbers");
  if (*count == 0 || *index >= *count) throw bad("I must be less than N");
  return {*index, *count};
}

std::pair<std::string, std::string> split_assignment(std::string_view text, std::string_view what) {
  auto eq = text.find('=');
  if (eq == std::string_view::npos || eq == 0)
    throw std::invalid_argument("bad " + std::string(what) + " '" + std::string(text) +
                                "': expected KEY=VALUE");
  return {std::string(net::trim_ows(text.substr(0, eq))), std::string(text.substr(eq + 1))};
}

HttpHeader parse_header(std::string_view text) {
  auto colon = text.find(':');
  if (colon == std::string_view::npos || net::trim_ows(text.substr(0, colon)).empty())
    throw std::invalid_argument("bad --header '" + std::string(text) +
                                "': expected 'Name: value'");
  auto name = net::trim_ows(text.substr(0, colon));
  for (char c : name)
    if (c <= ' ' || c == ':' || c >= 127)
      throw std::invalid_argument("bad --header '" + std::string(text) +
                                  "': the name may not contain spaces or control characters");
  auto value = net::trim_ows(text.substr(colon + 1));
  for (char c : value)
    if (c == '\r' || c == '\n')
      throw std::invalid_argument("bad --header '" + std::string(name) +
                                  "': the value may not contain line breaks");
  return {std::string(name), std::string(value)};
}

}  // namespace retrace::replay
