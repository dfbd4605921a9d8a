// Sweep plan: the run layout, plan.json (de)serialisation and its atomic rewrite, and turning the
// user's replay flags into replay::Options.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

#include "base/json_fields.hpp"
#include "base/json_text.hpp"
#include "net/http_rules.hpp"
#include "base/private_file.hpp"
#include "format/redaction.hpp"
#include "sweep/sweep.hpp"

namespace retrace::sweep {

namespace json = boost::json;

namespace {


double parse_level(std::string_view item, Axis axis) {
  item = net::trim_ows(item);
  std::string flag = "--" + std::string(to_string(axis));
  if (axis == Axis::concurrency) {
    int value = 0;
    auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), value);
    if (ec != std::errc{} || end != item.data() + item.size() || value < 1)
      throw std::invalid_argument(flag + ": '" + std::string(item) + "' is not a positive integer");
    return replay::check_concurrency(value, flag);  // replay's bound, replay's rule
  }
  if (axis == Axis::rate) return replay::parse_rate(item, flag);  // replay's bounds, replay's rule
  double value = 0;
  auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), value);
  if (ec != std::errc{} || end != item.data() + item.size())
    throw std::invalid_argument(flag + ": '" + std::string(item) + "' is not a number (2 = twice as fast)");
  return replay::check_speed(value, flag);
}

json::array strings_to_json(const std::vector<std::string>& items) {
  json::array out;
  for (const auto& item : items) out.emplace_back(item);
  return out;
}

}  // namespace

replay::Options to_replay_options(const ReplayArgs& args, const std::string& target,
                                  int concurrency, const std::vector<Label>& run_labels) {
  replay::Schedule schedule;
  schedule.kind = replay::ScheduleKind::concurrency;
  schedule.concurrency = concurrency;
  return to_replay_options(args, target, schedule, run_labels);
}

replay::Options to_replay_options(const ReplayArgs& args, const std::string& target,
                                  const replay::Schedule& schedule,
                                  const std::vector<Label>& run_labels) {
  replay::Options options;
  options.target = target;
  options.schedule = schedule;
  replay::apply_request_flags(args, options);
  for (const auto& header : options.headers)
    if (is_redaction_marker(header.value))
      throw std::invalid_argument("header " + header.name +
                                  " is a secret not kept in plan.json: pass --header '" +
                                  header.name + ": VALUE' again with --resume");
  options.labels.insert(options.labels.end(), run_labels.begin(), run_labels.end());
  return options;
}

std::optional<Order> order_from_string(std::string_view text) { return enum_from_name<Order>(text); }

std::string_view to_string(Order order) { return enum_name(order, "?"); }

std::optional<Axis> axis_from_string(std::string_view text) { return enum_from_name<Axis>(text); }

std::string_view to_string(Axis axis) { return enum_name(axis, "?"); }

replay::Schedule schedule_at(const Plan& plan, double level) {
  replay::Schedule schedule;
  switch (plan.axis) {
    case Axis::concurrency:
      schedule.kind = replay::ScheduleKind::concurrency;
      schedule.concurrency = static_cast<int>(level);
      break;
    case Axis::rate: {
      schedule.kind = replay::ScheduleKind::rate;
      schedule.concurrency = 0;  // no cap on requests in flight
      schedule.rate = level;
      replay::apply_schedule_flags({plan.arrival, plan.burstiness}, schedule);
      break;
    }
    case Axis::speed:
      schedule.kind = replay::ScheduleKind::recorded;
      schedule.concurrency = 0;
      schedule.speed = level;
      break;
  }
  return schedule;
}

std::vector<double> parse_levels(std::string_view text, Axis axis) {
  std::vector<double> levels;
  std::set<double> seen;
  while (true) {
    auto comma = text.find(',');
    double level = parse_level(text.substr(0, comma), axis);
    if (!seen.insert(level).second)
      throw std::invalid_argument("--" + std::string(to_string(axis)) + ": level " +
                                  level_text(level) + " is listed twice");
    levels.push_back(level);
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return levels;
}

std::vector<PlannedRun> plan_runs(const std::vector<double>& levels, int repeats, Order order,
                                  Axis axis) {
  if (levels.empty())
    throw std::invalid_argument("a sweep needs at least one " + std::string(to_string(axis)) + " level");
  if (repeats < 1) throw std::invalid_argument("--repeat must be at least 1");
  std::string prefix = axis == Axis::concurrency ? "c" : std::string(to_string(axis));
  auto make = [&](double level, int repeat) {
    PlannedRun run;
    run.level = level;
    run.repeat = repeat;
    run.name = prefix + level_text(level) + "-r" + std::to_string(repeat);
    run.file = run.name + ".rtrace";
    return run;
  };
  std::vector<PlannedRun> runs;
  if (order == Order::grouped) {
    for (double level : levels)
      for (int repeat = 1; repeat <= repeats; ++repeat) runs.push_back(make(level, repeat));
  } else {
    for (int repeat = 1; repeat <= repeats; ++repeat)
      for (double level : levels) runs.push_back(make(level, repeat));
  }
  // Both orders start with (levels[0], repeat 1): the baseline every other run is compared with.
  runs.front().baseline = true;
  return runs;
}

std::string plan_to_json(const Plan& plan) {
  json::object replay;
  replay["set"] = strings_to_json(plan.replay.set);
  replay["unset"] = strings_to_json(plan.replay.unset);
  json::array headers;
  for (const auto& header : plan.replay.headers) {
    auto colon = header.find(':');
    std::string name = header.substr(0, colon);
    // Secret values stay out of plan.json; on --resume the user passes them again.
    headers.emplace_back(is_secret_header(name) ? name + ": " + std::string(kRedacted) : header);
  }
  replay["headers"] = std::move(headers);
  replay["token_ids"] = plan.replay.token_ids;
  replay["model"] = plan.replay.model;
  replay["max_error_rate"] = plan.replay.max_error_rate;
  replay["api_key_env"] = plan.replay.api_key_env;
  replay["set_secrets"] = strings_to_json(plan.replay.set_secrets);  // FIELD=ENV: names only
  replay["timeout"] = plan.replay.timeout;
  replay["request_deadline"] = plan.replay.request_deadline;
  replay["max_response_bytes"] = plan.replay.max_response_bytes;
  replay["no_stream"] = plan.replay.no_stream;
  replay["labels"] = strings_to_json(plan.replay.labels);
  if (plan.replay.limit) replay["limit"] = *plan.replay.limit;
  replay["warmup"] = plan.replay.warmup;
  replay["filters"] = strings_to_json(plan.replay.filters);
  replay["ca_file"] = plan.replay.ca_file;
  replay["insecure"] = plan.replay.insecure;
  replay["threads"] = plan.replay.threads;
  replay["scrape_interval"] = plan.replay.scrape_interval;
  replay["scrape_url"] = plan.replay.scrape_url;
  replay["no_scrape"] = plan.replay.no_scrape;
  replay["derive_tokens"] = plan.replay.derive_tokens;
  replay["seed"] = plan.replay.seed;
  replay["window_from"] = plan.replay.window_from;
  replay["window_to"] = plan.replay.window_to;
  replay["max_idle_gap"] = plan.replay.max_idle_gap;
  if (plan.replay.sample_sessions) replay["sample_sessions"] = *plan.replay.sample_sessions;
  if (plan.replay.requests) replay["requests"] = *plan.replay.requests;
  replay["duration"] = plan.replay.duration;

  json::array runs;
  for (const auto& run : plan.runs) {
    runs.push_back(json::object{{"name", run.name},
                                {"level", report::level_json(run.level)},
                                {"repeat", run.repeat},
                                {"file", run.file},
                                {"baseline", run.baseline},
                                {"status", run.done ? "done" : "pending"}});
  }
  json::array levels;
  for (double level : plan.levels) levels.push_back(report::level_json(level));
  json::object root{{"retrace_sweep_plan", 1},
                    {"trace", plan.trace},
                    {"target", plan.target},
                    {"axis", std::string(to_string(plan.axis))},
                    {"arrival", plan.arrival},
                    {"burstiness", plan.burstiness ? json::value(*plan.burstiness) : json::value(nullptr)},
                    {"levels", std::move(levels)},
                    {"repeats", plan.repeats},
                    {"order", std::string(to_string(plan.order))},
                    {"answers_from", plan.answers_from},
                    {"match", plan.match},
                    {"near_tie", plan.near_tie},
                    {"replay", std::move(replay)},
                    {"runs", std::move(runs)}};
  return json_text(root) + "\n";  // plain decimals: 0.5, not 5E-1
}

namespace {

// Every field of a plan is required; base/json_fields.hpp's strict flavour names the file and
// the field when one is missing or mistyped.
struct Fields {
  const json::object& object;
  const std::string& where;
  StrictFields strict{object, where};

  const json::value& get(std::string_view key) const { return *strict.find(key, Presence::required); }
  std::string str(std::string_view key) const { return std::string(*strict.string(key, Presence::required)); }
  std::int64_t integer(std::string_view key) const {
    return *strict.integer<std::int64_t>(key, Presence::required);
  }
  double number(std::string_view key) const { return *strict.number(key, Presence::required); }
  bool boolean(std::string_view key) const { return *strict.boolean(key, Presence::required); }
  std::vector<std::string> strings(std::string_view key) const {
    std::vector<std::string> out;
    for (const auto& item : *strict.array(key, Presence::required)) {
      if (!item.is_string()) strict.mistyped(key, "an array of strings");
      out.emplace_back(item.get_string());
    }
    return out;
  }
  const json::object& object_at(std::string_view key) const { return *strict.object(key, Presence::required); }
};

// plan.json's "replay": the flags every run passes to replay.
ReplayArgs replay_from_json(const Fields& replay) {
  ReplayArgs flags;
  flags.set = replay.strings("set");
  flags.unset = replay.strings("unset");
  flags.headers = replay.strings("headers");
  flags.token_ids = replay.str("token_ids");
  // Plans written before --model and --max-error-rate keep the defaults.
  if (replay.object.contains("model")) flags.model = replay.str("model");
  if (replay.object.contains("max_error_rate"))
    flags.max_error_rate = replay.number("max_error_rate");
  flags.api_key_env = replay.str("api_key_env");
  if (replay.object.contains("set_secrets")) flags.set_secrets = replay.strings("set_secrets");
  if (replay.object.contains("timeout")) {
    flags.timeout = replay.str("timeout");
  } else {  // plans written before the flags were shared with replay kept seconds
    std::ostringstream seconds;
    seconds << replay.number("timeout_s") << "s";
    flags.timeout = seconds.str();
  }
  if (replay.object.contains("request_deadline"))  // plans written before it have none
    flags.request_deadline = replay.str("request_deadline");
  if (replay.object.contains("max_response_bytes"))  // plans written before it keep the default
    flags.max_response_bytes = static_cast<std::size_t>(replay.integer("max_response_bytes"));
  flags.no_stream = replay.object.contains("no_stream") && replay.boolean("no_stream");
  flags.labels = replay.strings("labels");
  if (replay.object.contains("limit"))
    flags.limit = static_cast<std::size_t>(replay.integer("limit"));
  flags.warmup = static_cast<std::size_t>(replay.integer("warmup"));
  flags.filters = replay.strings("filters");
  flags.ca_file = replay.str("ca_file");
  flags.insecure = replay.boolean("insecure");
  flags.threads = static_cast<unsigned>(replay.integer("threads"));
  if (replay.object.contains("scrape_interval")) flags.scrape_interval = replay.str("scrape_interval");  // plans
  if (replay.object.contains("scrape_url")) flags.scrape_url = replay.str("scrape_url");  // before 1.5
  flags.no_scrape = replay.object.contains("no_scrape") && replay.boolean("no_scrape");
  flags.derive_tokens = replay.object.contains("derive_tokens") && replay.boolean("derive_tokens");
  // Plans written before the trace controls keep their defaults.
  if (replay.object.contains("seed")) flags.seed = static_cast<std::uint64_t>(replay.integer("seed"));
  if (replay.object.contains("window_from")) flags.window_from = replay.str("window_from");
  if (replay.object.contains("window_to")) flags.window_to = replay.str("window_to");
  if (replay.object.contains("max_idle_gap")) flags.max_idle_gap = replay.str("max_idle_gap");
  if (replay.object.contains("sample_sessions"))
    flags.sample_sessions = replay.number("sample_sessions");
  if (replay.object.contains("requests"))
    flags.requests = static_cast<std::size_t>(replay.integer("requests"));
  if (replay.object.contains("duration")) flags.duration = replay.str("duration");
  return flags;
}

// One of plan.json's "runs".
PlannedRun run_from_json(const Fields& run_fields, const std::string& where) {
  PlannedRun run;
  run.name = run_fields.str("name");
  run.level = run_fields.object.contains("level") ? run_fields.number("level")
                                                  : static_cast<double>(run_fields.integer("concurrency"));
  run.repeat = static_cast<int>(run_fields.integer("repeat"));
  run.file = run_fields.str("file");
  if (run.file.empty() || run.file.find('/') != std::string::npos)
    throw std::runtime_error(where + ": run '" + run.name +
                             "' names a file outside the sweep directory");
  run.baseline = run_fields.boolean("baseline");
  auto status = run_fields.str("status");
  if (status != "done" && status != "pending")
    throw std::runtime_error(where + ": run '" + run.name + "' has unknown status '" + status + "'");
  run.done = status == "done";
  return run;
}

// The axis, its levels, the arrival process and its burstiness.
void read_axis(const Fields& fields, const std::string& where, Plan& plan) {
  auto& levels = fields.get("levels");
  if (!levels.is_array()) throw std::runtime_error(where + ": field 'levels' must be an array");
  // Plans written before the rate and speed axes are concurrency sweeps.
  if (fields.object.contains("axis")) {
    auto axis = axis_from_string(fields.str("axis"));
    if (!axis) throw std::runtime_error(where + ": 'axis' must be concurrency, rate or speed");
    plan.axis = *axis;
  }
  if (fields.object.contains("arrival")) plan.arrival = fields.str("arrival");
  // Plans written before --burstiness have none.
  if (const auto* burstiness = fields.object.if_contains("burstiness"); burstiness && !burstiness->is_null()) {
    if (!burstiness->is_number()) throw std::runtime_error(where + ": 'burstiness' must be a number or null");
    plan.burstiness = burstiness->to_number<double>();
  }
  for (auto& level : levels.get_array()) {
    if (!level.is_number() || !(level.to_number<double>() > 0))
      throw std::runtime_error(where + ": 'levels' must hold numbers above 0");
    plan.levels.push_back(level.to_number<double>());
  }
}

}  // namespace

Plan plan_from_json(std::string_view text, const std::string& where) {
  json::error_code ec;
  json::value root = json::parse(text, ec);
  if (ec) throw std::runtime_error(where + ": not valid JSON (" + ec.message() + ")");
  if (!root.is_object() || !root.get_object().contains("retrace_sweep_plan"))
    throw std::runtime_error(where + ": not a retrace sweep plan");
  Fields fields{root.get_object(), where};
  if (fields.integer("retrace_sweep_plan") != 1)
    throw std::runtime_error(where + ": plan version " +
                             std::to_string(fields.integer("retrace_sweep_plan")) +
                             " is newer than this retrace understands; upgrade retrace");
  Plan plan;
  plan.trace = fields.str("trace");
  plan.target = fields.str("target");
  read_axis(fields, where, plan);
  plan.repeats = static_cast<int>(fields.integer("repeats"));
  auto order = order_from_string(fields.str("order"));
  if (!order) throw std::runtime_error(where + ": 'order' must be grouped or interleaved");
  plan.order = *order;
  plan.answers_from = fields.str("answers_from");
  plan.match = fields.str("match");
  plan.near_tie = fields.number("near_tie");

  plan.replay = replay_from_json(Fields{fields.object_at("replay"), where});

  auto& runs = fields.get("runs");
  if (!runs.is_array() || runs.get_array().empty())
    throw std::runtime_error(where + ": field 'runs' must be a non-empty array");
  for (auto& item : runs.get_array()) {
    if (!item.is_object()) throw std::runtime_error(where + ": each run must be an object");
    PlannedRun run = run_from_json(Fields{item.get_object(), where}, where);
    plan.runs.push_back(std::move(run));
  }
  if (!plan.runs.front().baseline)
    throw std::runtime_error(where + ": the first run must be the baseline");
  return plan;
}

void save_plan(const Plan& plan, const std::filesystem::path& dir) {
  write_private_file(dir / "plan.json", plan_to_json(plan));
}

Plan load_plan(const std::filesystem::path& dir) {
  auto path = dir / "plan.json";
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw std::runtime_error(path.string() + ": cannot read (is " + dir.string() +
                             " a sweep directory made by `retrace sweep --out`?)");
  std::ostringstream text;
  text << in.rdbuf();
  return plan_from_json(text.str(), path.string());
}

std::vector<std::size_t> pending_runs(const Plan& plan) {
  std::vector<std::size_t> pending;
  for (std::size_t i = 0; i < plan.runs.size(); ++i)
    if (!plan.runs[i].done) pending.push_back(i);
  return pending;
}

}  // namespace retrace::sweep
