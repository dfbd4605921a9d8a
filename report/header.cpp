#include "report/header.hpp"

#include <ctime>

#include <boost/json.hpp>

#include "metrics/run_settings.hpp"
#include "report/text.hpp"

namespace retrace::report {

namespace json = boost::json;

namespace {

json::value parse_or_null(const std::string& text) {
  if (text.empty()) return nullptr;
  json::error_code ec;
  auto value = json::parse(text, ec);
  return ec ? json::value(nullptr) : value;
}

std::string string_at(const json::value& value, std::string_view key) {
  const auto* object = value.if_object();
  if (!object) return {};
  const auto* field = object->if_contains(key);
  if (!field) return {};
  if (const auto* text = field->if_string()) return std::string(*text);
  if (field->is_number()) return json_text(*field);
  return {};
}

// A number as JSON writes it (report/text.hpp's rule: 2, not 2E0); "" when absent.
template <class Number>
std::string text_of(const std::optional<Number>& number) {
  return number ? json_text(json::value(*number)) : std::string();
}

// The trace controls (replay/select.cpp) change what was measured, so the schedule says them:
// ", window 1000 ms to 60000 ms, idle gaps ≤ 500 ms, ..."; empty when none was used.
std::string trace_controls_of(const metrics::RunSettings& settings) {
  std::string text;
  auto from = text_of(settings.window_from_ms), to = text_of(settings.window_to_ms);
  if (!from.empty() || !to.empty())
    text += ", window " + (from.empty() ? "0" : from) + " ms to " + (to.empty() ? "end" : to + " ms");
  if (settings.max_idle_gap_ms) text += ", idle gaps ≤ " + text_of(settings.max_idle_gap_ms) + " ms";
  if (settings.sample_sessions)
    text += ", sessions sampled " + text_of(settings.sample_sessions) + " (seed " + text_of(settings.sample_seed) + ")";
  if (settings.requests) text += ", " + text_of(settings.requests) + " requests";
  if (settings.duration_ms) text += ", no new request after " + text_of(settings.duration_ms) + " ms";
  return text;
}

// A live run's tool turns (replay/replay.hpp, substitute_session_answers), when it had any:
// ", live tool turns: 2 with this run's calls, 1 kept as recorded".
std::string live_tool_turns_of(const metrics::RunSettings& settings) {
  const auto& turns = settings.live_tool_turns;
  if (!turns || (turns->substituted == 0 && turns->kept_as_recorded == 0)) return {};
  return ", live tool turns: " + std::to_string(turns->substituted) + " with this run's calls, " +
         std::to_string(turns->kept_as_recorded) + " kept as recorded";
}

std::string schedule_of(const metrics::RunSettings& settings) {
  if (!settings.schedule) return {};
  const auto& schedule = *settings.schedule;
  std::string text = schedule.kind;
  if (schedule.kind == "concurrency") text = "concurrency " + text_of(schedule.concurrency);
  if (schedule.kind == "rate") text = "rate " + text_of(schedule.rate) + "/s " + schedule.arrival.value_or("");
  if (schedule.kind == "recorded") text = "recorded timing ×" + text_of(schedule.speed);
  // A merged run (replay/merge.hpp) says it was sent from N shards; its totals are the sums.
  if (settings.shards) text += ", " + std::to_string(settings.shards->size()) + " shards";
  return text + trace_controls_of(settings) + live_tool_turns_of(settings);
}

std::string model_of(const json::value& server_info) {
  const auto* object = server_info.if_object();
  const json::value* models = object ? object->if_contains("models") : nullptr;
  const json::value* data = models && models->is_object() ? models->as_object().if_contains("data") : nullptr;
  if (!data || !data->is_array() || data->as_array().empty()) return {};
  return string_at(data->as_array().front(), "id");
}


std::string or_unknown(const std::string& text) { return text.empty() ? "unknown" : text; }

json::value or_null(const std::string& text) {
  return text.empty() ? json::value(nullptr) : json::value(text);
}

}  // namespace

std::string utc_time(std::int64_t unix_ns) {
  std::time_t seconds = static_cast<std::time_t>(unix_ns / 1'000'000'000);
  std::tm parts{};
  gmtime_r(&seconds, &parts);
  char buffer[40];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &parts);
  return buffer;
}

std::string trace_controls(const TraceHeader& header) {
  return trace_controls_of(metrics::run_settings_of(header.settings));
}

ReportHeader header_from_trace(const TraceHeader& header) {
  ReportHeader out;
  out.server = header.target;
  auto settings = metrics::run_settings_of(header.settings);
  out.schedule = schedule_of(settings);
  out.trace = settings.input.value_or("");
  out.model = model_of(parse_or_null(header.server_info));
  out.when = header.created_unix_ns > 0 ? utc_time(header.created_unix_ns) : "";
  out.tool_version = header.tool_version;
  return out;
}

ReportHeader header_of_trace(const std::string& path) {
  TraceReader reader(path);
  return header_from_trace(reader.header());
}

std::string header_line(const ReportHeader& header) {
  return "server " + or_unknown(header.server) + " · model " + or_unknown(header.model) +
         " · schedule " + or_unknown(header.schedule) + " · trace " + or_unknown(header.trace) +
         " · " + or_unknown(header.when) + " · retrace " + or_unknown(header.tool_version);
}

json::object header_json(const ReportHeader& header) {
  return {{"server", or_null(header.server)},   {"model", or_null(header.model)},
          {"schedule", or_null(header.schedule)}, {"trace", or_null(header.trace)},
          {"when", or_null(header.when)},       {"tool_version", or_null(header.tool_version)}};
}

}  // namespace retrace::report
