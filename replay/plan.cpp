// Parsing and planning for replay: options, selection, body rewriting, arrival processes.
#include <fnmatch.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "base/text.hpp"
#include "net/http_rules.hpp"
#include "replay/replay.hpp"

namespace retrace::replay {
namespace json = boost::json;

namespace {


bool glob_match(const std::string& pattern, const std::string& text) {
  return ::fnmatch(pattern.c_str(), text.c_str(), 0) == 0;
}

std::optional<std::size_t> parse_index(std::string_view segment) {
  if (segment.empty() || segment.size() > 9) return std::nullopt;
  std::size_t value = 0;
  auto [ptr, ec] = std::from_chars(segment.data(), segment.data() + segment.size(), value);
  if (ec != std::errc() || ptr != segment.data() + segment.size()) return std::nullopt;
  return value;
}

std::vector<std::string_view> split_path(std::string_view path) {
  std::vector<std::string_view> segments;
  std::size_t start = 0;
  while (true) {
    auto dot = path.find('.', start);
    segments.push_back(path.substr(start, dot == std::string_view::npos ? path.npos : dot - start));
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  for (auto segment : segments)
    if (segment.empty())
      throw std::invalid_argument("body path '" + std::string(path) +
                                  "' has an empty segment; write it as a.b.c");
  return segments;
}

// Walks to the parent of the last segment; creates objects when `create`. nullptr: absent.
json::value* walk_to_parent(json::value& root, const std::vector<std::string_view>& segments,
                            std::string_view path, bool create) {
  json::value* node = &root;
  for (std::size_t i = 0; i + 1 < segments.size(); ++i) {
    auto segment = segments[i];
    if (auto* object = node->if_object()) {
      auto it = object->find(segment);
      if (it == object->end()) {
        if (!create) return nullptr;
        node = &(*object)[segment];
        *node = json::object();
      } else {
        node = &it->value();
        if (create && node->is_null()) *node = json::object();
      }
    } else if (auto* array = node->if_array()) {
      auto index = parse_index(segment);
      if (!index)
        throw std::invalid_argument("body path '" + std::string(path) + "': '" +
                                    std::string(segment) + "' indexes an array; use a number");
      if (*index >= array->size()) {
        if (!create) return nullptr;
        throw std::invalid_argument("body path '" + std::string(path) + "': index " +
                                    std::string(segment) + " is past the array's end (size " +
                                    std::to_string(array->size()) + ")");
      }
      node = &(*array)[*index];
    } else {
      if (!create) return nullptr;
      throw std::invalid_argument("body path '" + std::string(path) + "' runs through '" +
                                  std::string(segment) + "', which is not an object or array");
    }
  }
  return node;
}


}  // namespace

// xoshiro256** seeded by splitmix64: the same stream on every platform.
class Random {
 public:
  explicit Random(std::uint64_t seed) {
    for (auto& word : state_) {
      seed += 0x9e3779b97f4a7c15ull;
      std::uint64_t z = seed;
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
      word = z ^ (z >> 31);
    }
  }
  std::uint64_t next() {
    auto rotl = [](std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); };
    std::uint64_t result = rotl(state_[1] * 5, 7) * 9;
    std::uint64_t t = state_[1] << 17;
    state_[2] ^= state_[0];
    state_[3] ^= state_[1];
    state_[1] ^= state_[2];
    state_[0] ^= state_[3];
    state_[2] ^= t;
    state_[3] = rotl(state_[3], 45);
    return result;
  }
  // (0, 1]: never 0, so log() is finite.
  double uniform() { return (static_cast<double>(next() >> 11) + 1.0) * 0x1.0p-53; }
  double exponential() { return -std::log(uniform()); }
  double normal() {
    // Box-Muller; one of the pair is enough here.
    double u1 = uniform(), u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
  }
  // Marsaglia & Tsang; shape < 1 through the boost x * U^(1/shape). Mean = shape.
  double gamma(double shape) {
    if (shape < 1) return gamma(shape + 1) * std::pow(uniform(), 1.0 / shape);
    double d = shape - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
    while (true) {
      double x = normal(), v = 1 + c * x;
      if (v <= 0) continue;
      v = v * v * v;
      double u = uniform();
      if (std::log(u) < 0.5 * x * x + d - d * v + d * std::log(v)) return d * v;
    }
  }

 private:
  std::uint64_t state_[4];
};

std::string_view to_string(ScheduleKind kind) { return enum_name(kind, "?"); }

std::string_view to_string(Arrival arrival) { return enum_name(arrival, "?"); }

std::optional<Arrival> arrival_from_string(std::string_view text) {
  return enum_from_name<Arrival>(text);
}

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
    auto limit = parse_duration(part.substr(colon + 1), "--slo " + std::string(metric));
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

void validate_filter(std::string_view filter) {
  auto colon = filter.find(':');
  auto kind = filter.substr(0, colon);
  if (colon == std::string_view::npos || (kind != "path" && kind != "label" && kind != "session"))
    throw std::invalid_argument("bad --filter '" + std::string(filter) +
                                "': use path:GLOB, label:KEY=GLOB or session:GLOB");
  if (kind == "label" && filter.find('=', colon) == std::string_view::npos)
    throw std::invalid_argument("bad --filter '" + std::string(filter) +
                                "': a label filter is label:KEY=GLOB");
}

bool matches_filter(const Exchange& exchange, std::string_view filter) {
  auto colon = filter.find(':');
  auto kind = filter.substr(0, colon);
  auto pattern = filter.substr(colon + 1);
  if (kind == "path") {
    auto target = std::string_view(exchange.request.target);
    auto path = target.substr(0, target.find('?'));
    return glob_match(std::string(pattern), std::string(path));
  }
  if (kind == "session") return glob_match(std::string(pattern), exchange.session_id);
  if (kind == "label") {
    auto eq = pattern.find('=');
    auto* value = exchange.label(pattern.substr(0, eq));
    return value && glob_match(std::string(pattern.substr(eq + 1)), *value);
  }
  return false;
}

std::string apply_body_overrides(std::string_view body,
                                 const std::vector<std::pair<std::string, std::string>>& set,
                                 const std::vector<std::string>& unset) {
  if (set.empty() && unset.empty()) return std::string(body);
  json::error_code ec;
  json::value root = json::parse(body, ec);
  if (ec || !root.is_object())
    throw std::invalid_argument("the request body is not a JSON object, so --set/--unset cannot "
                                "apply; use --filter to leave such requests out");
  for (const auto& path : unset) {
    auto segments = split_path(path);
    auto* parent = walk_to_parent(root, segments, path, false);
    if (!parent) continue;
    if (auto* object = parent->if_object()) {
      object->erase(segments.back());
    } else if (auto* array = parent->if_array()) {
      auto index = parse_index(segments.back());
      if (index && *index < array->size()) array->erase(array->begin() + *index);
    }
  }
  for (const auto& [path, text] : set) {
    auto segments = split_path(path);
    auto* parent = walk_to_parent(root, segments, path, true);
    json::error_code value_ec;
    json::value value = json::parse(text, value_ec);
    if (value_ec) value = json::string(text);
    if (auto* object = parent->if_object()) {
      (*object)[segments.back()] = std::move(value);
    } else if (auto* array = parent->if_array()) {
      auto index = parse_index(segments.back());
      if (!index || *index > array->size())
        throw std::invalid_argument("body path '" + path + "': '" +
                                    std::string(segments.back()) + "' is not an index of the array");
      if (*index == array->size()) array->push_back(std::move(value));
      else (*array)[*index] = std::move(value);
    } else {
      throw std::invalid_argument("body path '" + path + "': its parent is not an object");
    }
  }
  return json::serialize(root);
}

namespace {

// An answer's token bytes as the text a server sends: a character cut short at the end (an answer
// stopped by max_tokens inside an emoji) is held back, as servers hold it back, and any other byte
// that is not UTF-8 becomes U+FFFD, as servers decode it; token bytes sent as they are would be
// invalid JSON text to the server (llama-server answers it with HTTP 500).
std::string server_text(std::string_view bytes) {
  bytes = bytes.substr(0, utf8_whole_prefix(bytes));
  if (is_valid_utf8(bytes)) return std::string(bytes);
  std::string text;
  for (std::size_t at = 0; at < bytes.size();) {
    std::size_t length = 1;
    while (length <= 4 && !is_valid_utf8(bytes.substr(at, length))) ++length;
    if (length > 4) {
      text += "\xEF\xBF\xBD";
      ++at;
    } else {
      text.append(bytes.substr(at, length));
      at += length;
    }
  }
  return text;
}

}  // namespace

std::string substitute_session_answers(std::string_view body,
                                       const std::vector<std::optional<std::string>>& answers) {
  if (answers.empty()) return std::string(body);
  json::error_code ec;
  json::value root = json::parse(body, ec);
  if (ec || !root.is_object()) return std::string(body);
  auto* messages = root.as_object().if_contains("messages");
  if (!messages || !messages->is_array()) return std::string(body);
  std::vector<json::object*> assistant;
  for (auto& message : messages->as_array()) {
    auto* object = message.if_object();
    if (!object) continue;
    auto* role = object->if_contains("role");
    if (role && role->is_string() && role->as_string() == "assistant") assistant.push_back(object);
  }
  bool changed = false;
  std::size_t pairs = std::min(assistant.size(), answers.size());
  for (std::size_t j = 0; j < pairs; ++j) {
    const auto& answer = answers[answers.size() - 1 - j];
    if (!answer) continue;
    (*assistant[assistant.size() - 1 - j])["content"] = json::string(server_text(*answer));
    changed = true;
  }
  return changed ? json::serialize(root) : std::string(body);
}

namespace {
constexpr double kMaxScheduleSeconds = 100.0 * 365 * 24 * 3600;
}  // namespace

Arrivals::Arrivals(const Schedule& schedule, std::uint64_t seed)
    : schedule_(schedule), random_(std::make_unique<Random>(seed)) {
  if (!(schedule.rate > 0)) throw std::invalid_argument("--rate must be above 0");
}
Arrivals::~Arrivals() = default;

std::int64_t Arrivals::next() {
  // An offset past what int64 nanoseconds hold (292 years) would overflow; no real schedule
  // is that long, so a rate that low is a mistake worth naming.
  if (!(at_s_ < kMaxScheduleSeconds))
    throw std::invalid_argument("--rate " + std::to_string(schedule_.rate) +
                                " would schedule request " + std::to_string(drawn_ + 1) +
                                " more than 100 years after the start; give a higher rate");
  auto offset = static_cast<std::int64_t>(std::llround(at_s_ * 1e9));
  double mean_gap_s = 1.0 / schedule_.rate;
  switch (schedule_.arrival) {
    case Arrival::constant: at_s_ += mean_gap_s; break;
    case Arrival::poisson: at_s_ += mean_gap_s * random_->exponential(); break;
    case Arrival::gamma: {
      double shape = schedule_.burstiness > 0 ? schedule_.burstiness : 1;
      at_s_ += random_->gamma(shape) * mean_gap_s / shape;
      break;
    }
  }
  ++drawn_;
  return offset;
}

std::vector<std::int64_t> arrival_offsets_ns(std::size_t count, const Schedule& schedule,
                                             std::uint64_t seed) {
  Arrivals arrivals(schedule, seed);
  std::vector<std::int64_t> offsets;
  offsets.reserve(count);
  for (std::size_t i = 0; i < count; ++i) offsets.push_back(arrivals.next());
  return offsets;
}

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

std::filesystem::path repeat_path(const std::filesystem::path& out, int k, int repeats) {
  if (repeats <= 1) return out;
  auto stem = out.stem().string();
  auto extension = out.extension().string();
  if (extension.empty()) extension = ".rtrace";
  return out.parent_path() / (stem + ".r" + std::to_string(k) + extension);
}

}  // namespace retrace::replay
