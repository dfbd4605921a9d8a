// The run's settings as its trace header records them (replay/replay.hpp, settings_json), and
// where each --repeat writes.
#include <boost/json.hpp>
#include <filesystem>
#include <string>

#include "replay/replay.hpp"

namespace retrace::replay {
namespace json = boost::json;

std::string settings_json(const Options& options, std::string_view input_path) {
  json::object settings;
  settings["command"] = "replay";
  if (!input_path.empty()) settings["input"] = std::string(input_path);
  settings["target"] = options.target;
  json::object schedule;
  schedule["kind"] = std::string(to_string(options.schedule.kind));
  switch (options.schedule.kind) {
    case ScheduleKind::concurrency: schedule["concurrency"] = options.schedule.concurrency; break;
    case ScheduleKind::rate:
      schedule["rate"] = options.schedule.rate;
      schedule["arrival"] = std::string(to_string(options.schedule.arrival));
      schedule["burstiness"] = options.schedule.burstiness;
      schedule["seed"] = options.seed;
      break;
    case ScheduleKind::recorded:
      // No cap on requests in flight here (nor under --rate): the trace's own times decide.
      schedule["speed"] = options.schedule.speed;
      break;
  }
  settings["schedule"] = std::move(schedule);
  settings["sessions"] = options.sessions || options.live_sessions;
  settings["session_mode"] = options.live_sessions ? "live" : "recorded";
  settings["warmup"] = options.warmup;
  if (options.limit) settings["limit"] = *options.limit;
  if (options.skipped_rejected) settings["skipped_rejected"] = options.skipped_rejected;
  // The trace controls (replay/select.cpp).
  if (options.window_from) settings["window_from_ms"] = options.window_from->count() / 1e6;
  if (options.window_to) settings["window_to_ms"] = options.window_to->count() / 1e6;
  if (options.max_idle_gap) settings["max_idle_gap_ms"] = options.max_idle_gap->count() / 1e6;
  if (options.sample_sessions) {
    settings["sample_sessions"] = *options.sample_sessions;
    settings["sample_seed"] = options.seed;
  }
  if (options.requests) settings["requests"] = *options.requests;
  // A time-limited run: no request was sent later than this after the start; in-flight ones ended.
  if (options.duration) settings["duration_ms"] = options.duration->count() / 1e6;
  json::array filters;
  for (const auto& f : options.filters) filters.emplace_back(f);
  settings["filters"] = std::move(filters);
  json::object set;
  for (const auto& [path, value] : options.set) set[path] = value;
  settings["set"] = std::move(set);
  json::array unset;
  for (const auto& path : options.unset) unset.emplace_back(path);
  settings["unset"] = std::move(unset);
  json::array headers;
  for (const auto& header : options.headers)
    headers.emplace_back(header.name + ": " +
                         (is_secret_header(header.name) ? std::string(kRedacted) : header.value));
  settings["headers"] = std::move(headers);
  if (!options.api_key_env.empty()) settings["api_key_env"] = options.api_key_env;
  settings["token_ids"] = options.token_ids ? llm::to_string(*options.token_ids) : "auto";
  if (options.model) settings["model"] = *options.model;
  settings["timeout_ms"] = options.timeout.count();  // idle: no byte for this long
  if (options.request_deadline) settings["request_deadline_ms"] = options.request_deadline->count();
  settings["stream"] = options.stream;
  json::object labels;
  for (const auto& label : options.labels) labels[label.key] = label.value;
  settings["labels"] = std::move(labels);
  if (!options.run_name.empty()) settings["run"] = options.run_name;
  if (options.repeat_index > 0) settings["repeat"] = options.repeat_index;
  json::object slo;
  if (options.slo.ttft) slo["ttft_ms"] = options.slo.ttft->count() / 1e6;
  if (options.slo.tpot) slo["tpot_ms"] = options.slo.tpot->count() / 1e6;
  if (options.slo.e2e) slo["e2e_ms"] = options.slo.e2e->count() / 1e6;
  settings["slo"] = std::move(slo);
  settings["shard"] = std::to_string(options.shard_index) + "/" + std::to_string(options.shard_count);
  settings["threads"] = options.threads;
  if (!options.ca_file.empty()) settings["ca_file"] = options.ca_file;
  if (options.insecure) settings["insecure"] = true;
  return json::serialize(settings);
}

std::string with_live_tool_turns(std::string_view settings, std::size_t substituted, std::size_t kept) {
  json::error_code ec;
  auto value = json::parse(settings, ec);
  if (ec || !value.is_object()) value = json::object();
  value.as_object()["live_tool_turns"] = json::object{
      {"rule", kLiveToolTurnRule}, {"substituted", substituted}, {"kept_as_recorded", kept}};
  return json::serialize(value);
}

std::filesystem::path repeat_path(const std::filesystem::path& out, int k, int repeats) {
  if (repeats <= 1) return out;
  auto stem = out.stem().string();
  auto extension = out.extension().string();
  if (extension.empty()) extension = ".rtrace";
  return out.parent_path() / (stem + ".r" + std::to_string(k) + extension);
}

}  // namespace retrace::replay
