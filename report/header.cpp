#include "report/header.hpp"

#include <ctime>

#include <boost/json.hpp>

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

std::string or_zero(const std::string& count) { return count.empty() ? "0" : count; }

std::string string_at(const json::value& value, std::string_view key) {
  const auto* object = value.if_object();
  if (!object) return {};
  const auto* field = object->if_contains(key);
  if (!field) return {};
  if (const auto* text = field->if_string()) return std::string(*text);
  if (field->is_number()) return json_text(*field);
  return {};
}

// The trace controls (replay/select.cpp) change what was measured, so the schedule says them:
// ", window 1000 ms to 60000 ms, idle gaps ≤ 500 ms, ..."; empty when none was used.
std::string trace_controls_of(const json::value& settings) {
  std::string text;
  auto from = string_at(settings, "window_from_ms"), to = string_at(settings, "window_to_ms");
  if (!from.empty() || !to.empty())
    text += ", window " + (from.empty() ? "0" : from) + " ms to " + (to.empty() ? "end" : to + " ms");
  if (auto gap = string_at(settings, "max_idle_gap_ms"); !gap.empty())
    text += ", idle gaps ≤ " + gap + " ms";
  if (auto sample = string_at(settings, "sample_sessions"); !sample.empty())
    text += ", sessions sampled " + sample + " (seed " + string_at(settings, "sample_seed") + ")";
  if (auto requests = string_at(settings, "requests"); !requests.empty())
    text += ", " + requests + " requests";
  if (auto duration = string_at(settings, "duration_ms"); !duration.empty())
    text += ", no new request after " + duration + " ms";
  return text;
}

// A live run's tool turns (replay/replay.hpp, substitute_session_answers), when it had any:
// ", live tool turns: 2 with this run's calls, 1 kept as recorded".
std::string live_tool_turns_of(const json::value& settings) {
  const auto* object = settings.if_object();
  const json::value* turns = object ? object->if_contains("live_tool_turns") : nullptr;
  if (!turns) return {};
  auto substituted = string_at(*turns, "substituted"), kept = string_at(*turns, "kept_as_recorded");
  if ((substituted.empty() || substituted == "0") && (kept.empty() || kept == "0")) return {};
  return ", live tool turns: " + or_zero(substituted) + " with this run's calls, " + or_zero(kept) +
         " kept as recorded";
}

std::string schedule_of(const json::value& settings) {
  const auto* object = settings.if_object();
  const json::value* schedule = object ? object->if_contains("schedule") : nullptr;
  if (!schedule) return {};
  std::string kind = string_at(*schedule, "kind");
  std::string text = kind;
  if (kind == "concurrency") text = "concurrency " + string_at(*schedule, "concurrency");
  if (kind == "rate")
    text = "rate " + string_at(*schedule, "rate") + "/s " + string_at(*schedule, "arrival");
  if (kind == "recorded") text = "recorded timing ×" + string_at(*schedule, "speed");
  // A merged run (replay/merge.hpp) says it was sent from N shards; its totals are the sums.
  if (const auto* shards = object->if_contains("shards"); shards && shards->is_array())
    text += ", " + std::to_string(shards->as_array().size()) + " shards";
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
  return trace_controls_of(parse_or_null(header.settings));
}

ReportHeader header_from_trace(const TraceHeader& header) {
  ReportHeader out;
  out.server = header.target;
  auto settings = parse_or_null(header.settings);
  out.schedule = schedule_of(settings);
  out.trace = string_at(settings, "input");
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
