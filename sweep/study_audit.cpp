// What a study reads of each exchange beyond its output: the sampling its body asked for, and
// what its response says of the prompt cache (vLLM and SGLang: usage.prompt_tokens_details.
// cached_tokens; SGLang's native API: meta_info.cached_tokens; llama.cpp: timings.cache_n) and of
// the model that answered.
#include <boost/json.hpp>
#include <cmath>
#include <iterator>
#include <stdexcept>
#include <vector>

#include "base/json_text.hpp"
#include "sweep/study.hpp"

namespace retrace::sweep {

namespace json = boost::json;

namespace {

std::optional<json::object> parse_object(std::string_view text) {
  auto open = text.find('{');
  auto close = text.rfind('}');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) return std::nullopt;
  json::error_code ec;
  auto value = json::parse(text.substr(open, close - open + 1), ec);
  if (ec || !value.is_object()) return std::nullopt;
  return std::move(value.get_object());
}

std::string model_in(const json::object& object) {
  auto* model = object.if_contains("model");
  return model && model->is_string() ? std::string(model->get_string()) : std::string();
}

// A sampling field's JSON text from its slot; nullopt for a value JsonPaths keeps no copy of (a
// string, a boolean, an array or an object), which only the whole parse can print.
std::optional<std::string> number_text(const JsonSlot& slot) {
  switch (slot.kind) {
    case JsonSlot::int64: return json_text(json::value(slot.i));
    case JsonSlot::uint64: return json_text(json::value(slot.u));
    case JsonSlot::real: return json_text(json::value(slot.d));
    default: return std::nullopt;
  }
}

// The sampling by a whole parse: for a body whose values are not all numbers.
ExchangeAudit audit_parsed(std::string_view body) {
  ExchangeAudit audit;
  auto object = parse_object(body);
  if (!object) return audit;
  std::vector<const json::object*> scopes{&*object};
  for (auto name : {"sampling_params", "parameters"})
    if (auto* nested = object->if_contains(name); nested && nested->is_object())
      scopes.push_back(&nested->get_object());
  auto field = [&](std::string_view key) -> std::optional<std::string> {
    for (const json::object* scope : scopes)
      if (auto* value = scope->if_contains(key); value && !value->is_null()) return json_text(*value);
    return std::nullopt;
  };
  audit.temperature = field("temperature");
  audit.top_p = field("top_p");
  audit.top_k = field("top_k");
  audit.seed = field("seed");
  audit.n = field("n");
  return audit;
}

constexpr std::string_view kCachedFields[] = {"usage.prompt_tokens_details.cached_tokens", "meta_info.cached_tokens",
                                              "timings.cache_n", "usage.cached_tokens"};

}  // namespace

// Sampling at the top level (OpenAI, vLLM, llama.cpp), or in SGLang's sampling_params or TGI's
// parameters: the first place that names it (not null).
const std::array<JsonSlot, 5>& AuditReader::sampling(std::string_view body) {
  fields_.fill(JsonSlot{});
  if (!sampling_.read(body)) return fields_;
  constexpr std::size_t kScopes = 3;
  for (std::size_t field = 0; field < fields_.size(); ++field)
    for (std::size_t scope = 0; scope < kScopes; ++scope)
      if (const JsonSlot& slot = sampling_[scope * fields_.size() + field]; slot.kind != JsonSlot::absent) {
        fields_[field] = slot;
        break;
      }
  return fields_;
}

ExchangeAudit AuditReader::body(std::string_view body) {
  ExchangeAudit audit;
  const auto& fields = sampling(body);
  std::optional<std::string>* into[] = {&audit.temperature, &audit.top_p, &audit.top_k, &audit.seed, &audit.n};
  for (std::size_t field = 0; field < fields.size(); ++field) {
    if (fields[field].kind == JsonSlot::other) return audit_parsed(body);
    *into[field] = number_text(fields[field]);
  }
  return audit;
}

std::optional<std::int64_t> AuditReader::cached_in(std::string_view text, bool& parsed, const Exchange& exchange,
                                                   std::optional<std::size_t> event) {
  constexpr double kLimit = 9223372036854775808.0;  // 2^63
  parsed = cached_.read(text);
  for (std::size_t path = 0; path < std::size(kCachedFields); ++path) {
    const JsonSlot& slot = cached_[path];
    if (slot.kind == JsonSlot::absent || slot.kind == JsonSlot::other) continue;  // not a number: not said there
    if (slot.kind == JsonSlot::int64 && slot.i >= 0) return slot.i;
    if (slot.kind == JsonSlot::real && slot.d >= 0 && slot.d < kLimit && std::trunc(slot.d) == slot.d)
      return static_cast<std::int64_t>(slot.d);
    throw std::runtime_error("exchange " + std::to_string(exchange.id) + ": " + std::string(kCachedFields[path]) +
                             " in " +
                             (event ? "event " + std::to_string(*event) + " of its response" : "its response body") + " is " + number_text(slot).value_or("?") +
                             ", not a count of tokens (a whole number from 0 to 2^63 - 1): the server's usage "
                             "is malformed; leave the exchange out (retrace replay --requests, or a trace "
                             "without it) or fix the server");
  }
  return std::nullopt;
}

std::optional<std::int64_t> AuditReader::cached_tokens(const Exchange& exchange) {
  bool parsed = false;
  if (!exchange.response.streamed) return cached_in(exchange.response.body, parsed, exchange, std::nullopt);
  const auto& events = exchange.response.events;
  // The cache counts ride on the last events (the usage chunk, llama.cpp's final timings). An
  // event that does not mention a cache holds none of the fields: it is not parsed, and counts
  // among the four looked at when it holds an object.
  for (std::size_t seen = 0, i = events.size(); i-- > 0 && seen < 4;) {
    std::string_view data = events[i].data;
    if (data.find("cache") == std::string_view::npos) {
      seen += data.find('{') != std::string_view::npos;
      continue;
    }
    auto cached = cached_in(data, parsed, exchange, i);
    if (!parsed) continue;
    ++seen;
    if (cached) return cached;
  }
  return std::nullopt;
}

ExchangeAudit audit_body(std::string_view body) { return AuditReader().body(body); }

std::optional<std::int64_t> cached_tokens_of(const Exchange& exchange) { return AuditReader().cached_tokens(exchange); }

ExchangeAudit audit_exchange(const Exchange& exchange) {
  AuditReader reader;
  ExchangeAudit audit = reader.body(exchange.request.body);
  audit.cached_tokens = reader.cached_tokens(exchange);
  if (!exchange.response.streamed) {
    if (auto object = parse_object(exchange.response.body)) audit.model = model_in(*object);
    return audit;
  }
  const auto& events = exchange.response.events;
  for (std::size_t i = 0; i < events.size() && i < 4 && audit.model.empty(); ++i)
    if (auto object = parse_object(events[i].data)) audit.model = model_in(*object);
  return audit;
}

void count_sampling(const ExchangeAudit& audit, report::SamplingAudit& into) {
  ++into.exchanges;
  auto text = [](const std::optional<std::string>& value) { return value.value_or("absent"); };
  ++into.temperature[text(audit.temperature)];
  ++into.top_p[text(audit.top_p)];
  ++into.top_k[text(audit.top_k)];
  ++into.seed[text(audit.seed)];
  ++into.n[text(audit.n)];
  if (!audit.temperature) {
    ++into.temperature_unset;
    return;
  }
  json::error_code ec;
  auto value = json::parse(*audit.temperature, ec);
  if (!ec && value.is_number() && value.to_number<double>() == 0)
    ++into.greedy;
  else
    ++into.sampled;
}

}  // namespace retrace::sweep
