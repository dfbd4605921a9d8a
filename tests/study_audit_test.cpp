// sweep::AuditReader (one SAX pass over the key paths, base/json_paths.hpp) against a whole
// Boost.JSON parse of each text written here, the reference: the sampling's JSON text and the
// cached tokens on crafted texts for each rule, then on generated ones; and the cached count's
// rule for numbers that are not a plain count (7.0 is 7; negative, fractional or too large is an
// error naming the field).
#include <catch2/catch.hpp>

#include <boost/json.hpp>
#include <string>
#include <vector>

#include "base/json_text.hpp"
#include "base/splitmix.hpp"
#include "sweep/study.hpp"

using namespace retrace;
namespace json = boost::json;

namespace {

// The reference: the text between the first '{' and the last '}' parsed whole, the paths walked.
std::optional<json::object> object_of(std::string_view text) {
  auto open = text.find('{'), close = text.rfind('}');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) return std::nullopt;
  json::error_code ec;
  auto value = json::parse(text.substr(open, close - open + 1), ec);
  if (ec || !value.is_object()) return std::nullopt;
  return std::move(value.get_object());
}

std::vector<std::optional<std::string>> reference_sampling(std::string_view body) {
  std::vector<std::optional<std::string>> fields(5);
  auto object = object_of(body);
  if (!object) return fields;
  std::vector<const json::object*> scopes{&*object};
  for (auto name : {"sampling_params", "parameters"})
    if (auto* nested = object->if_contains(name); nested && nested->is_object()) scopes.push_back(&nested->get_object());
  const char* names[] = {"temperature", "top_p", "top_k", "seed", "n"};
  for (int field = 0; field < 5; ++field)
    for (const json::object* scope : scopes)
      if (auto* value = scope->if_contains(names[field]); value && !value->is_null()) {
        fields[field] = json_text(*value);
        break;
      }
  return fields;
}

// The reference count: the first of the four paths that holds a number; "error" for one that is
// not a count; the walk over a streamed response's last events as AuditReader::cached_tokens says.
std::string reference_cached_in(const json::object& object, bool& said) {
  for (auto keys : {std::vector<std::string_view>{"usage", "prompt_tokens_details", "cached_tokens"},
                    {"meta_info", "cached_tokens"}, {"timings", "cache_n"}, {"usage", "cached_tokens"}}) {
    const json::object* at = &object;
    const json::value* value = nullptr;
    for (auto key : keys) {
      value = at ? at->if_contains(key) : nullptr;
      if (!value) break;
      at = value->is_object() ? &value->get_object() : nullptr;
    }
    if (!value || !value->is_number()) continue;
    said = true;
    if (value->is_int64() && value->get_int64() >= 0) return std::to_string(value->get_int64());
    if (value->is_double() && value->get_double() >= 0 && value->get_double() < 9223372036854775808.0 &&
        value->get_double() == static_cast<double>(static_cast<std::int64_t>(value->get_double())))
      return std::to_string(static_cast<std::int64_t>(value->get_double()));
    return "error";
  }
  return "absent";
}
std::string reference_cached(const Exchange& exchange) {
  bool said = false;
  if (!exchange.response.streamed) {
    auto object = object_of(exchange.response.body);
    return object ? reference_cached_in(*object, said) : "absent";
  }
  const auto& events = exchange.response.events;
  for (std::size_t seen = 0, i = events.size(); i-- > 0 && seen < 4;) {
    std::string_view data = events[i].data;
    if (data.find("cache") == std::string_view::npos) {
      seen += data.find('{') != std::string_view::npos;
      continue;
    }
    auto object = object_of(data);
    if (!object) continue;
    ++seen;
    said = false;
    std::string count = reference_cached_in(*object, said);
    if (said) return count;
  }
  return "absent";
}

std::string audited_cached(sweep::AuditReader& reader, const Exchange& exchange) {
  try {
    auto cached = reader.cached_tokens(exchange);
    return cached ? std::to_string(*cached) : "absent";
  } catch (const std::runtime_error&) {
    return "error";
  }
}

Exchange response(bool streamed, std::string body, std::vector<std::string> events = {}) {
  Exchange exchange;
  exchange.id = 17;
  exchange.response.streamed = streamed;
  exchange.response.body = std::move(body);
  for (auto& data : events) exchange.response.events.push_back({0, std::move(data)});
  return exchange;
}

void check_sampling(sweep::AuditReader& reader, const std::string& body) {
  auto audit = reader.body(body);
  auto expected = reference_sampling(body);
  INFO(body);
  CHECK(audit.temperature == expected[0]);
  CHECK(audit.top_p == expected[1]);
  CHECK(audit.top_k == expected[2]);
  CHECK(audit.seed == expected[3]);
  CHECK(audit.n == expected[4]);
}

void check_cached(sweep::AuditReader& reader, const Exchange& exchange) {
  INFO(exchange.response.body << " | " << exchange.response.events.size() << " events, the last "
                              << (exchange.response.events.empty() ? "" : exchange.response.events.back().data));
  CHECK(audited_cached(reader, exchange) == reference_cached(exchange));
}

// A random JSON text over the audit's keys: numbers of every kind, nulls, strings, nesting,
// duplicate keys, and text around the object.
struct Generator {
  std::uint64_t state;
  std::vector<std::string> keys;
  std::uint64_t below(std::uint64_t n) { return splitmix64_next(state) % n; }
  std::string value(int depth) {
    switch (below(depth < 3 ? 12 : 8)) {
      case 0: return "null";
      case 1: return below(2) ? "true" : "false";
      case 2: return std::to_string(static_cast<std::int64_t>(splitmix64_next(state)));
      case 3: return std::to_string(splitmix64_next(state));  // past int64 half the time
      case 4: {
        const char* reals[] = {"0.0", "-0.0", "0.7", "1e-300", "1.5e300", "42.0", "7.0", "9223372036854775808.0",
                               "-9.223372036854775808e18", "12.5", "1e400", "-3"};
        return reals[below(12)];
      }
      case 5: return below(2) ? "\"0.7\"" : "\"t\\u00e9\"";
      case 6: case 7: return std::to_string(static_cast<int>(below(20)) - 5);
      case 8: case 9: return object(depth + 1);
      default: return "[" + value(depth + 1) + "]";
    }
  }
  std::string object(int depth) {
    std::string text = "{";
    for (std::uint64_t i = 0, n = below(5); i < n; ++i)
      text += (i ? "," : "") + ("\"" + keys[below(keys.size())] + "\":") + value(depth);
    return text + "}";
  }
  std::string text() {
    const char* around[] = {"", "data: ", "x}"};
    const char* after[] = {"", "\n\n", "}", " trailing"};
    return around[below(3)] + object(1) + after[below(4)];
  }
};

}  // namespace

TEST_CASE("The audit reads a body's sampling as a whole parse of it does") {
  sweep::AuditReader reader;
  for (std::string body : {R"({"temperature":0,"top_p":0.7,"top_k":40,"seed":42,"n":1})",
                           R"({"temperature":0.7,"top_p":1e-3,"top_k":40.0,"seed":42.5,"n":1e20})",
                           R"({"temperature":-0.0,"seed":-0,"top_k":9223372036854775807,"top_p":18446744073709551615})",
                           R"({"temperature":1e400,"top_p":-1e400})",
                           R"({"temperature":"0.7","top_p":true,"top_k":[1],"seed":{"a":1},"n":null})",
                           R"({"sampling_params":{"temperature":0.5,"top_k":3},"temperature":null})",
                           R"({"parameters":{"temperature":0.5,"seed":7},"sampling_params":{"temperature":0.1}})",
                           R"({"sampling_params":{"seed":1},"sampling_params":5})",
                           R"({"temperature":0.1,"temperature":0.9,"seed":1,"seed":null})",
                           R"({"nested":{"temperature":0.3},"temperature":0.4})", R"({"temp\u0065rature":0.25})",
                           R"(data: {"temperature":0.5} trailing)", R"({"temperature":0.5)", "{}", "", "not json"})
    check_sampling(reader, body);
  Generator generator{45, {"temperature", "top_p", "top_k", "seed", "n", "sampling_params", "parameters", "x"}};
  for (int i = 0; i < 20'000; ++i) check_sampling(reader, generator.text());
}

TEST_CASE("The audit reads the cached tokens of a response as a whole parse of it does") {
  sweep::AuditReader reader;
  const std::string usage = R"({"usage":{"prompt_tokens_details":{"cached_tokens":7}}})";
  for (std::string text : {usage, std::string(R"({"meta_info":{"cached_tokens":5}})"),
                           std::string(R"({"timings":{"cache_n":3,"prompt_n":9}})"),
                           std::string(R"({"usage":{"cached_tokens":true},"timings":{"cache_n":8}})"),
                           std::string(R"({"usage":{"prompt_tokens_details":{"cached_tokens":6}},"usage":5})"),
                           std::string(R"({"usage":{"cached_tokens":3})"), std::string("cache"), std::string()}) {
    check_cached(reader, response(false, text));
    check_cached(reader, response(true, "", {text, "data: [DONE]\n\n"}));
  }
  check_cached(reader, response(true, "", {usage, "{\"a\":1}", "{\"a\":1}", "{\"a\":1}", "{\"a\":1}"}));
  check_cached(reader, response(true, "", {usage, "{\"a\":1}", "{\"a\":1}", "{\"a\":1}"}));
  check_cached(reader, response(true, "", {usage, "cache", "cache", "cache", "cache", "cache"}));
  Generator generator{46, {"usage", "prompt_tokens_details", "cached_tokens", "meta_info", "timings", "cache_n", "x"}};
  for (int i = 0; i < 20'000; ++i) {
    std::vector<std::string> events;
    for (std::uint64_t e = 0, n = generator.below(7); e < n; ++e) events.push_back(generator.text());
    check_cached(reader, response(generator.below(2) == 0, generator.text(), std::move(events)));
  }
}

TEST_CASE("A cached count written as a whole double is that count") {
  auto exchange = response(false, R"({"usage":{"prompt_tokens_details":{"cached_tokens":7.0}}})");
  CHECK(sweep::cached_tokens_of(exchange) == 7);
  exchange = response(true, "", {R"(data: {"timings":{"cache_n":4096.0}})", "data: [DONE]"});
  CHECK(sweep::cached_tokens_of(exchange) == 4096);
}

TEST_CASE("A cached count that is negative or fractional or past int64 is an error naming the field") {
  CHECK_THROWS_WITH(sweep::cached_tokens_of(response(false, R"({"usage":{"prompt_tokens_details":{"cached_tokens":7.5}}})")),
                    Catch::Contains("exchange 17: usage.prompt_tokens_details.cached_tokens in its response body is 7.5"));
  CHECK_THROWS_WITH(sweep::cached_tokens_of(response(false, R"({"meta_info":{"cached_tokens":-2}})")),
                    Catch::Contains("meta_info.cached_tokens in its response body is -2, not a count of tokens"));
  CHECK_THROWS_WITH(sweep::cached_tokens_of(response(true, "", {R"({"timings":{"cache_n":9223372036854775808}})", "x"})),
                    Catch::Contains("timings.cache_n in event 0 of its response is 9223372036854775808"));
  CHECK_THROWS_WITH(sweep::cached_tokens_of(response(false, R"({"usage":{"cached_tokens":1e19}})")),
                    Catch::Contains("usage.cached_tokens in its response body is 10000000000000000000"));
}
