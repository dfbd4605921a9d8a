// The run's settings as its trace header records them (replay/replay.hpp, run_settings), and
// where each --repeat writes.
#include <filesystem>
#include <string>

#include "replay/replay.hpp"

namespace retrace::replay {

namespace {

std::optional<double> milliseconds(const std::optional<std::chrono::nanoseconds>& duration) {
  if (!duration) return std::nullopt;
  return static_cast<double>(duration->count()) / 1e6;
}

metrics::ScheduleSettings schedule_settings(const Options& options) {
  const auto& schedule = options.schedule;
  metrics::ScheduleSettings out;
  out.kind = std::string(to_string(schedule.kind));
  switch (schedule.kind) {
    case ScheduleKind::concurrency: out.concurrency = schedule.concurrency; break;
    case ScheduleKind::rate:
      out.rate = schedule.rate;
      out.arrival = std::string(to_string(schedule.arrival));
      out.burstiness = schedule.burstiness;
      out.seed = options.seed;
      break;
    case ScheduleKind::recorded:
      // No cap on requests in flight here (nor under --rate): the trace's own times decide.
      out.speed = schedule.speed;
      break;
  }
  return out;
}

// The trace controls (replay/select.cpp).
void trace_controls(const Options& options, RunSettings& settings) {
  settings.window_from_ms = milliseconds(options.window_from);
  settings.window_to_ms = milliseconds(options.window_to);
  settings.max_idle_gap_ms = milliseconds(options.max_idle_gap);
  if (options.sample_sessions) {
    settings.sample_sessions = *options.sample_sessions;
    settings.sample_seed = options.seed;
  }
  if (options.requests) settings.requests = *options.requests;
  settings.duration_ms = milliseconds(options.duration);
}

// What is sent: the body edits, the headers (a secret one's value redacted), the model, streaming.
void request_settings(const Options& options, RunSettings& settings) {
  settings.filters = options.filters;
  for (const auto& [path, value] : options.set) settings.set[path] = value;
  settings.unset = options.unset;
  for (const auto& header : options.headers)
    settings.headers.push_back(header.name + ": " +
                               (is_secret_header(header.name) ? std::string(kRedacted) : header.value));
  if (!options.api_key_env.empty()) settings.api_key_env = options.api_key_env;
  settings.token_ids = options.token_ids ? std::string(llm::to_string(*options.token_ids)) : "auto";
  settings.model = options.model;
  settings.timeout_ms = options.timeout.count();
  if (options.request_deadline) settings.request_deadline_ms = options.request_deadline->count();
  settings.stream = options.stream;
}

}  // namespace

RunSettings run_settings(const Options& options, std::string_view input_path) {
  RunSettings settings;
  settings.command = "replay";
  if (!input_path.empty()) settings.input = std::string(input_path);
  settings.target = options.target;
  settings.schedule = schedule_settings(options);
  settings.sessions = options.sessions || options.live_sessions;
  settings.session_mode = options.live_sessions ? "live" : "recorded";
  settings.warmup = options.warmup;
  if (options.limit) settings.limit = *options.limit;
  if (options.skipped_rejected) settings.skipped_rejected = options.skipped_rejected;
  trace_controls(options, settings);
  request_settings(options, settings);
  for (const auto& label : options.labels) settings.labels[label.key] = label.value;
  if (!options.run_name.empty()) settings.run = options.run_name;
  if (options.repeat_index > 0) settings.repeat = options.repeat_index;
  settings.slo = {milliseconds(options.slo.ttft), milliseconds(options.slo.tpot), milliseconds(options.slo.e2e),
                  options.slo.ttft_tpots};
  settings.shard = std::to_string(options.shard_index) + "/" + std::to_string(options.shard_count);
  settings.threads = options.threads;
  if (!options.ca_file.empty()) settings.ca_file = options.ca_file;
  if (options.insecure) settings.insecure = true;
  if (options.writer.derive_tokens) settings.derive_tokens = true;
  return settings;
}

std::filesystem::path repeat_path(const std::filesystem::path& out, int k, int repeats) {
  if (repeats <= 1) return out;
  auto stem = out.stem().string();
  auto extension = out.extension().string();
  if (extension.empty()) extension = ".rtrace";
  return out.parent_path() / (stem + ".r" + std::to_string(k) + extension);
}

}  // namespace retrace::replay
