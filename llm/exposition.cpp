// The Prometheus text exposition parser and the engines' alias table (llm/exposition.hpp).
// One pass over the page, line by line; a family's # TYPE is kept in a hash map (O(1) a line).
#include "llm/exposition.hpp"

#include <charconv>
#include <cmath>
#include <limits>
#include <unordered_map>

namespace retrace::llm {
namespace {

bool name_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
}
bool name_char(char c) { return name_start(c) || (c >= '0' && c <= '9'); }

// A metric (or label) name at the start of `rest`; "" when there is none. Consumes it.
std::string_view take_name(std::string_view& rest) {
  if (rest.empty() || !name_start(rest.front())) return {};
  std::size_t n = 1;
  while (n < rest.size() && name_char(rest[n])) ++n;
  auto name = rest.substr(0, n);
  rest.remove_prefix(n);
  return name;
}

void skip_blanks(std::string_view& rest) {
  while (!rest.empty() && (rest.front() == ' ' || rest.front() == '\t')) rest.remove_prefix(1);
}

std::string_view take_token(std::string_view& rest) {
  skip_blanks(rest);
  std::size_t n = 0;
  while (n < rest.size() && rest[n] != ' ' && rest[n] != '\t') ++n;
  auto token = rest.substr(0, n);
  rest.remove_prefix(n);
  return token;
}

// A float as Go's strconv writes Prometheus values: decimal or exponent, NaN, +Inf, -Inf.
std::optional<double> parse_value(std::string_view text) {
  if (text == "NaN" || text == "nan") return std::numeric_limits<double>::quiet_NaN();
  if (text == "+Inf" || text == "Inf" || text == "+inf" || text == "inf")
    return std::numeric_limits<double>::infinity();
  if (text == "-Inf" || text == "-inf") return -std::numeric_limits<double>::infinity();
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  if (text.empty() || !(text.front() == '-' || text.front() == '.' || (text.front() >= '0' && text.front() <= '9')))
    return std::nullopt;
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// The labels after '{' up to and including '}'; an error text, or "" when they were read.
std::string parse_labels(std::string_view& rest, ExpositionSample& sample) {
  for (;;) {
    skip_blanks(rest);
    if (!rest.empty() && rest.front() == '}') {
      rest.remove_prefix(1);
      return "";
    }
    auto name = take_name(rest);
    if (name.empty()) return "a label name was expected";
    skip_blanks(rest);
    if (rest.empty() || rest.front() != '=') return "'=' was expected after label " + std::string(name);
    rest.remove_prefix(1);
    skip_blanks(rest);
    if (rest.empty() || rest.front() != '"') return "label " + std::string(name) + "'s value is not quoted";
    rest.remove_prefix(1);
    std::string value;
    bool closed = false;
    while (!rest.empty()) {
      char c = rest.front();
      rest.remove_prefix(1);
      if (c == '"') {
        closed = true;
        break;
      }
      if (c != '\\') {
        value += c;
        continue;
      }
      if (rest.empty()) break;
      char escaped = rest.front();
      rest.remove_prefix(1);
      if (escaped == 'n') value += '\n';
      else if (escaped == '\\' || escaped == '"') value += escaped;
      else return "label " + std::string(name) + " has an unknown escape \\" + std::string(1, escaped);
    }
    if (!closed) return "label " + std::string(name) + "'s value is not closed";
    sample.labels.emplace_back(std::string(name), std::move(value));
    skip_blanks(rest);
    if (!rest.empty() && rest.front() == ',') rest.remove_prefix(1);
    else if (rest.empty() || rest.front() != '}') return "',' or '}' was expected after a label";
  }
}

MetricType type_from(std::string_view word) {
  if (word == "counter") return MetricType::counter;
  if (word == "gauge") return MetricType::gauge;
  if (word == "histogram" || word == "gaugehistogram") return MetricType::histogram;
  if (word == "summary") return MetricType::summary;
  return MetricType::untyped;
}

// A sample's family: its name, or its name less a histogram's or summary's suffix when the
// family with that base name was typed so.
MetricType type_of(std::string_view name,
                   const std::unordered_map<std::string_view, MetricType>& types) {
  if (auto found = types.find(name); found != types.end()) return found->second;
  for (std::string_view suffix : {"_bucket", "_sum", "_count", "_total", "_created"}) {
    if (name.size() <= suffix.size() || name.substr(name.size() - suffix.size()) != suffix) continue;
    auto found = types.find(name.substr(0, name.size() - suffix.size()));
    if (found != types.end()) return found->second;
  }
  return MetricType::untyped;
}

}  // namespace

Exposition parse_exposition(std::string_view text, std::size_t max_samples, bool distributions) {
  Exposition out;
  std::unordered_map<std::string_view, MetricType> types;  // views into `text`
  std::size_t line_number = 0;
  auto malformed = [&](const std::string& what) {
    ++out.malformed;
    if (out.errors.size() < kMaxNamedErrors)
      out.errors.push_back("line " + std::to_string(line_number) + ": " + what);
  };
  while (!text.empty()) {
    ++line_number;
    auto end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    std::string_view rest = line;
    skip_blanks(rest);
    if (rest.empty()) continue;
    if (rest.front() == '#') {
      rest.remove_prefix(1);
      auto keyword = take_token(rest);
      if (keyword != "TYPE") continue;  // HELP, UNIT, EOF and plain comments
      auto family = take_token(rest);
      auto type = take_token(rest);
      if (family.empty() || type.empty()) malformed("# TYPE needs a metric name and a type");
      else if (types.size() < max_samples) types[family] = type_from(type);
      continue;
    }
    ExpositionSample sample;
    auto name = take_name(rest);
    if (name.empty()) {
      malformed("a metric name was expected");
      continue;
    }
    auto type = type_of(name, types);
    if (!distributions && (type == MetricType::histogram || type == MetricType::summary)) {
      ++out.skipped;
      continue;
    }
    sample.name = name;
    sample.type = type;
    if (!rest.empty() && rest.front() == '{') {
      rest.remove_prefix(1);
      if (auto error = parse_labels(rest, sample); !error.empty()) {
        malformed(sample.name + ": " + error);
        continue;
      }
    }
    auto value_text = take_token(rest);
    auto value = parse_value(value_text);
    if (!value) {
      malformed(sample.name + ": '" + std::string(value_text.substr(0, 40)) + "' is not a number");
      continue;
    }
    sample.value = *value;
    auto timestamp = take_token(rest);
    if (!timestamp.empty()) {
      std::int64_t ms = 0;
      auto [at, ec] = std::from_chars(timestamp.data(), timestamp.data() + timestamp.size(), ms);
      if (ec != std::errc() || at != timestamp.data() + timestamp.size()) {
        // OpenMetrics writes seconds with a fraction; read it as such.
        auto seconds = parse_value(timestamp);
        if (!seconds || !std::isfinite(*seconds) || std::fabs(*seconds) > 9e15) {
          malformed(sample.name + ": the timestamp '" + std::string(timestamp.substr(0, 40)) + "' is not a number");
          continue;
        }
        ms = static_cast<std::int64_t>(*seconds * 1000);
      }
      sample.timestamp_ms = ms;
    }
    skip_blanks(rest);
    if (!rest.empty() && rest.front() != '#') {  // '#': an OpenMetrics exemplar, ignored
      malformed(sample.name + ": unexpected text after the value");
      continue;
    }
    if (out.samples.size() >= max_samples) {
      ++out.dropped;
      continue;
    }
    out.samples.push_back(std::move(sample));
  }
  return out;
}

std::string series_name(const ExpositionSample& sample) {
  std::string name = sample.name;
  if (sample.labels.empty()) return name;
  name += '{';
  bool first = true;
  for (const auto& [key, value] : sample.labels) {
    if (!first) name += ',';
    first = false;
    name += key;
    name += "=\"";
    for (char c : value) {
      if (c == '\\' || c == '"') name += '\\';
      if (c == '\n') {
        name += "\\n";
        continue;
      }
      name += c;
    }
    name += '"';
  }
  name += '}';
  return name;
}

namespace {

struct AliasEntry {
  std::string_view name;
  std::string_view label = {};  // "key=value" a sample must carry, or "" for any
  Alias alias;
};

// Every engine's name for the same thing. vLLM (V1 names, and V0's gpu_* ones), SGLang, TGI,
// llama.cpp (--metrics), TensorRT-LLM behind Triton, and retrace serve.
constexpr AliasEntry kAliases[] = {
    {"vllm:num_requests_running", {}, {"running", false}},
    {"vllm:num_requests_waiting", {}, {"waiting", false}},
    {"vllm:kv_cache_usage_perc", {}, {"kv_usage", false}},
    {"vllm:gpu_cache_usage_perc", {}, {"kv_usage", false}},
    {"vllm:num_preemptions_total", {}, {"preemptions", true}},
    {"vllm:num_preemptions", {}, {"preemptions", true}},
    {"vllm:prefix_cache_queries_total", {}, {"prefix_cache_queries", true}},
    {"vllm:prefix_cache_hits_total", {}, {"prefix_cache_hits", true}},
    {"vllm:gpu_prefix_cache_queries_total", {}, {"prefix_cache_queries", true}},
    {"vllm:gpu_prefix_cache_hits_total", {}, {"prefix_cache_hits", true}},
    {"vllm:gpu_prefix_cache_hit_rate", {}, {"prefix_cache_hit_rate", false}},
    {"vllm:spec_decode_num_draft_tokens_total", {}, {"spec_decode_draft_tokens", true}},
    {"vllm:spec_decode_num_accepted_tokens_total", {}, {"spec_decode_accepted_tokens", true}},
    {"sglang:num_running_reqs", {}, {"running", false}},
    {"sglang:num_queue_reqs", {}, {"waiting", false}},
    {"sglang:token_usage", {}, {"kv_usage", false}},
    {"sglang:cache_hit_rate", {}, {"prefix_cache_hit_rate", false}},
    {"sglang:spec_accept_rate", {}, {"spec_decode_acceptance", false}},
    {"tgi_batch_current_size", {}, {"running", false}},
    {"tgi_queue_size", {}, {"waiting", false}},
    {"llamacpp:requests_processing", {}, {"running", false}},
    {"llamacpp:requests_deferred", {}, {"waiting", false}},
    {"llamacpp:kv_cache_usage_ratio", {}, {"kv_usage", false}},
    {"nv_trt_llm_request_metrics", "request_type=scheduled", {"running", false}},
    {"nv_trt_llm_request_metrics", "request_type=waiting", {"waiting", false}},
    {"retrace_sim_requests_running", {}, {"running", false}},
    {"retrace_sim_requests_waiting", {}, {"waiting", false}},
};

bool carries(const ExpositionSample& sample, std::string_view label) {
  if (label.empty()) return true;
  auto eq = label.find('=');
  auto key = label.substr(0, eq), value = label.substr(eq + 1);
  for (const auto& [k, v] : sample.labels)
    if (k == key) return v == value;
  return false;
}

}  // namespace

std::optional<Alias> alias_of(const ExpositionSample& sample) {
  // Built once: name -> its entries' first position (the table is small and sorted by engine).
  static const auto index = [] {
    std::unordered_map<std::string_view, std::size_t> map;
    for (std::size_t i = 0; i < std::size(kAliases); ++i) map.try_emplace(kAliases[i].name, i);
    return map;
  }();
  auto found = index.find(sample.name);
  if (found == index.end()) return std::nullopt;
  for (std::size_t i = found->second; i < std::size(kAliases) && kAliases[i].name == sample.name; ++i)
    if (carries(sample, kAliases[i].label)) return kAliases[i].alias;
  return std::nullopt;
}

}  // namespace retrace::llm
