// What a study reads of each exchange beyond its output: the sampling its body asked for, and
// what its response says of the prompt cache (vLLM and SGLang: usage.prompt_tokens_details.
// cached_tokens; SGLang's native API: meta_info.cached_tokens; llama.cpp: timings.cache_n) and of
// the model that answered.
#include <boost/json.hpp>
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

const json::value* path(const json::object& object, std::initializer_list<std::string_view> keys) {
  const json::object* at = &object;
  const json::value* value = nullptr;
  for (auto key : keys) {
    if (!at) return nullptr;
    value = at->if_contains(key);
    if (!value) return nullptr;
    at = value->is_object() ? &value->get_object() : nullptr;
  }
  return value;
}

std::optional<std::int64_t> integer_at(const json::object& object, std::initializer_list<std::string_view> keys) {
  const json::value* value = path(object, keys);
  if (!value || !value->is_number()) return std::nullopt;
  return value->to_number<std::int64_t>();
}

std::optional<std::int64_t> cached_in(const json::object& object) {
  for (auto keys : {std::initializer_list<std::string_view>{"usage", "prompt_tokens_details", "cached_tokens"},
                    {"meta_info", "cached_tokens"},
                    {"timings", "cache_n"},
                    {"usage", "cached_tokens"}})
    if (auto cached = integer_at(object, keys)) return cached;
  return std::nullopt;
}

std::string model_in(const json::object& object) {
  auto* model = object.if_contains("model");
  return model && model->is_string() ? std::string(model->get_string()) : std::string();
}

}  // namespace

ExchangeAudit audit_body(std::string_view body) {
  ExchangeAudit audit;
  auto object = parse_object(body);
  if (!object) return audit;
  // Sampling at the top level (OpenAI, vLLM, llama.cpp), or in SGLang's sampling_params or TGI's
  // parameters: the first place that names it.
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

std::optional<std::int64_t> cached_tokens_of(const Exchange& exchange) {
  if (!exchange.response.streamed) {
    auto object = parse_object(exchange.response.body);
    return object ? cached_in(*object) : std::nullopt;
  }
  const auto& events = exchange.response.events;
  // The cache counts ride on the last events (the usage chunk, llama.cpp's final timings). An
  // event that does not mention a cache holds none of cached_in's fields: it is not parsed, and
  // counts among the four looked at when it holds an object.
  for (std::size_t seen = 0, i = events.size(); i-- > 0 && seen < 4;) {
    std::string_view data = events[i].data;
    if (data.find("cache") == std::string_view::npos) {
      seen += data.find('{') != std::string_view::npos;
      continue;
    }
    auto object = parse_object(data);
    if (!object) continue;
    ++seen;
    if (auto cached = cached_in(*object)) return cached;
  }
  return std::nullopt;
}

ExchangeAudit audit_exchange(const Exchange& exchange) {
  ExchangeAudit audit = audit_body(exchange.request.body);
  audit.cached_tokens = cached_tokens_of(exchange);
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
