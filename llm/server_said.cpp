// llm/server_said.hpp: the server's own words about an exchange, typed.
#include "llm/server_said.hpp"

#include <algorithm>
#include <charconv>
#include <optional>

#include <boost/json/stream_parser.hpp>

#include "base/ascii.hpp"

namespace retrace::llm {
namespace {

namespace json = boost::json;

constexpr std::size_t kMostObjectBytes = 64u << 10;
constexpr std::size_t kLastEvents = 8;  // the usage chunk, [DONE], and a margin

// The object after the last `"key":` in `text`, or nullopt (absent, not an object, not parsed).
std::optional<json::object> object_after(std::string_view text, std::string_view key) {
  std::string quoted = "\"" + std::string(key) + "\"";
  for (auto at = text.rfind(quoted); at != std::string_view::npos;
       at = at == 0 ? std::string_view::npos : text.rfind(quoted, at - 1)) {
    auto rest = text.substr(at + quoted.size());
    auto colon = rest.find_first_not_of(" \t\r\n");
    if (colon == std::string_view::npos || rest[colon] != ':') continue;  // a value, not a key
    rest.remove_prefix(colon + 1);
    auto start = rest.find_first_not_of(" \t\r\n");
    if (start == std::string_view::npos || rest[start] != '{') return std::nullopt;
    rest = rest.substr(start, kMostObjectBytes);
    json::stream_parser parser;
    boost::system::error_code ec;
    parser.write_some(rest.data(), rest.size(), ec);
    if (ec || !parser.done()) return std::nullopt;
    auto value = parser.release();
    return std::move(value.as_object());
  }
  return std::nullopt;
}

std::optional<double> number(const json::object& object, std::string_view key) {
  auto* value = object.if_contains(key);
  if (!value) return std::nullopt;
  if (value->is_double()) return value->get_double();
  if (value->is_int64()) return static_cast<double>(value->get_int64());
  if (value->is_uint64()) return static_cast<double>(value->get_uint64());
  return std::nullopt;
}

void take(double& out, std::optional<double> value, double scale = 1) {
  if (value && *value >= 0) out = *value * scale;
}
void take(std::int64_t& out, std::optional<double> value) {
  if (value && *value >= 0) out = static_cast<std::int64_t>(*value);
}

// Reads one text (an event's data or the body); true when it found a server's own object.
bool read_text(std::string_view text, ServerSaid& said) {
  bool found = false;
  if (text.find("\"metrics\"") != std::string_view::npos) {
    if (auto metrics = object_after(text, "metrics");
        metrics && (metrics->contains("time_to_first_token_ms") || metrics->contains("queue_time_ms"))) {
      said.source = "vllm";
      take(said.queue_ms, number(*metrics, "queue_time_ms"));
      take(said.ttft_ms, number(*metrics, "time_to_first_token_ms"));
      take(said.decode_ms, number(*metrics, "generation_time_ms"));
      found = true;
    }
  }
  if (text.find("\"timings\"") != std::string_view::npos) {
    if (auto timings = object_after(text, "timings"); timings && timings->contains("prompt_ms")) {
      said.source = "llamacpp";
      take(said.ttft_ms, number(*timings, "prompt_ms"));
      take(said.decode_ms, number(*timings, "predicted_ms"));
      take(said.prompt_computed, number(*timings, "prompt_n"));
      take(said.cached_tokens, number(*timings, "cache_n"));
      found = true;
    }
  }
  if (text.find("\"meta_info\"") != std::string_view::npos) {
    auto meta = object_after(text, "meta_info");
    if (meta && (meta->contains("e2e_latency") || meta->contains("queue_time"))) {
      said.source = "sglang";
      take(said.e2e_ms, number(*meta, "e2e_latency"), 1000);
      // Seconds from its arrival at the scheduler to its first batch (the scheduler's queue_time
      // per request, passed through the detokenizer into meta_info by SGLang's tokenizer manager;
      // null or absent on versions and paths that do not time it).
      take(said.queue_ms, number(*meta, "queue_time"), 1000);
      take(said.cached_tokens, number(*meta, "cached_tokens"));
      found = true;
    }
  }
  if (said.cached_tokens < 0 && text.find("\"prompt_tokens_details\"") != std::string_view::npos) {
    if (auto details = object_after(text, "prompt_tokens_details")) {
      take(said.cached_tokens, number(*details, "cached_tokens"));
      if (said.cached_tokens >= 0 && said.source.empty()) said.source = "usage";
      found = found || said.cached_tokens >= 0;
    }
  }
  return found;
}

std::optional<double> header_ms(const Response& response, std::string_view name) {
  for (const auto& header : response.headers) {
    if (!ascii_iequals(header.name, name)) continue;
    double value = 0;
    auto text = trim(header.value);
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec == std::errc() && end == text.data() + text.size()) return value;
  }
  return std::nullopt;
}

}  // namespace

ServerSaid server_said(const Response& response) {
  ServerSaid said;
  if (response.status == 0) return said;
  if (!response.events.empty()) {
    auto from = response.events.size() - std::min(response.events.size(), kLastEvents);
    for (auto i = response.events.size(); i-- > from;)
      if (read_text(response.events[i].data, said)) break;
  } else {
    read_text(response.body, said);
  }
  if (auto total = header_ms(response, "x-total-time")) {  // TGI
    said.source = "tgi";
    take(said.e2e_ms, total);
    take(said.queue_ms, header_ms(response, "x-queue-time"));
    take(said.decode_ms, header_ms(response, "x-inference-time"));
  }
  return said;
}

}  // namespace retrace::llm
