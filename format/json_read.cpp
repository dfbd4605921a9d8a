// Trace records from their JSON view (format/json.hpp): what `retrace import --from export` and
// the tests read. Fields are read through base/json_fields.hpp's strict flavour: an absent or null
// field keeps its default, a mistyped one is a TraceError naming its whole path
// ("field \"choices.0.tokens.3.logprob\": expected a number").
#include <charconv>
#include <concepts>

#include "base/described_json.hpp"
#include "base/json_fields.hpp"
#include "format/json.hpp"
#include "format/wire_syntax.hpp"

namespace retrace {

namespace json = boost::json;

namespace {

template <std::integral Int>
void read(const StrictFields& fields, std::string_view key, Int& out) {
  if (auto value = fields.integer<Int>(key)) out = *value;
}
void read(const StrictFields& fields, std::string_view key, std::string& out) {
  if (auto value = fields.string(key)) out.assign(value->data(), value->size());
}
void read(const StrictFields& fields, std::string_view key, bool& out) {
  if (auto value = fields.boolean(key)) out = *value;
}
void read(const StrictFields& fields, std::string_view key, float& out) {
  if (auto value = fields.number(key)) out = static_cast<float>(*value);
}
void read_bytes(const StrictFields& fields, std::string_view key, std::string& out) {
  if (const auto* value = fields.find(key)) out = bytes_from_json(*value, fields.name(key));
}

// The objects of array field `key`, each with its fields (path "key.N").
template <class Each>
void each_object(const StrictFields& fields, std::string_view key, Each&& each) {
  const json::array* array = fields.array(key);
  if (!array) return;
  for (std::size_t i = 0; i < array->size(); ++i) {
    const std::string item = std::string(key) + "." + std::to_string(i);
    if (!(*array)[i].is_object()) fields.mistyped(item, "an object");
    each(fields.nested((*array)[i].get_object(), item));
  }
}

// An enum field spelled by its name; `names` lists them for the message.
template <class Enum, class Parse>
void read_name(const StrictFields& fields, std::string_view key, Enum& out, Parse parse,
               std::string_view names) {
  std::string name;
  read(fields, key, name);
  if (name.empty()) return;
  auto parsed = parse(name);
  if (!parsed) fields.mistyped(key, names);
  out = *parsed;
}

void read_labels(const StrictFields& fields, std::vector<Label>& out) {
  out.clear();
  if (const auto* labels = fields.object("labels")) {
    for (const auto& member : *labels) {
      out.push_back(Label{std::string(member.key()), bytes_from_json(member.value(), fields.name("labels"))});
    }
  }
}

void read_headers(const StrictFields& fields, std::vector<HttpHeader>& out) {
  out.clear();
  if (const auto* headers = fields.array("headers")) {
    for (const auto& header : *headers) {
      const auto* pair = header.if_array();
      if (!pair || pair->size() != 2) fields.mistyped("headers", "[name, value] pairs");
      out.push_back(HttpHeader{bytes_from_json((*pair)[0], fields.name("headers")),
                               bytes_from_json((*pair)[1], fields.name("headers"))});
    }
  }
}

std::optional<std::uint64_t> parse_hex64(std::string_view hex) {
  std::uint64_t value = 0;
  auto [end, error] = std::from_chars(hex.data(), hex.data() + hex.size(), value, 16);
  if (error != std::errc() || end != hex.data() + hex.size()) return std::nullopt;
  return value;
}

void read_key(const StrictFields& fields, RequestKey& out) {
  std::string key;
  read(fields, "key", key);
  if (key.empty()) return;
  auto hi = key.size() == 32 ? parse_hex64(std::string_view(key).substr(0, 16)) : std::nullopt;
  auto lo = key.size() == 32 ? parse_hex64(std::string_view(key).substr(16)) : std::nullopt;
  if (!hi || !lo) fields.mistyped("key", "32 hex digits");
  out = RequestKey{*hi, *lo};
}

void read_request(const StrictFields& fields, Request& out) {
  read_bytes(fields, "method", out.method);
  read_bytes(fields, "target", out.target);
  read_headers(fields, out.headers);
  read_bytes(fields, "body", out.body);
  if (auto unsendable = wire_syntax_error(out); !unsendable.empty())
    throw TraceError("\"request\" cannot go on the wire: " + unsendable +
                     " (CR, LF and other control bytes would start lines of their own)");
}

void read_response(const StrictFields& fields, Response& out) {
  read(fields, "status", out.status);
  read_headers(fields, out.headers);
  read_bytes(fields, "body", out.body);
  read(fields, "streamed", out.streamed);
  each_object(fields, "events", [&](const StrictFields& event_fields) {
    std::int64_t offset_ns = 0;
    std::string data;
    read(event_fields, "offset_ns", offset_ns);
    read_bytes(event_fields, "data", data);
    out.events.push_back(offset_ns, data);
  });
}

// Appends the token to `choice`, its alternatives to the choice's.
void read_token(const StrictFields& fields, Choice& choice) {
  Token& token = choice.tokens.emplace_back();
  token.top_begin = static_cast<std::uint32_t>(choice.alternatives.size());  // as wire.cpp spells it
  read(fields, "id", token.id);
  read_bytes(fields, "bytes", token.bytes);
  if (fields.find("logprob")) {
    token.has_logprob = true;
    read(fields, "logprob", token.logprob);
  }
  read(fields, "offset_ns", token.offset_ns);
  each_object(fields, "top", [&](const StrictFields& alternative_fields) {
    Alternative& alternative = choice.add_alternative(token);
    read(alternative_fields, "id", alternative.id);
    read_bytes(alternative_fields, "bytes", alternative.bytes);
    read(alternative_fields, "logprob", alternative.logprob);
  });
}

Choice read_choice(const StrictFields& fields) {
  Choice choice;
  read(fields, "index", choice.index);
  read_name(fields, "kind", choice.kind, token_kind_from_string,
            "none, text_deltas, logprob_tokens or token_ids");
  read_bytes(fields, "finish_reason", choice.finish_reason);
  read_name(fields, "part", choice.part, part_from_string,
            "content, reasoning, refusal, tool_call or embedding");
  read(fields, "tool_call", choice.tool_call);
  read_bytes(fields, "tool_name", choice.tool_name);
  if (const auto* values = fields.array("values")) {
    choice.values.reserve(values->size());
    for (const auto& value : *values) {
      if (!value.is_number()) fields.mistyped("values", "numbers");
      choice.values.push_back(value.to_number<double>());
    }
  }
  if (const auto* tokens = fields.array("tokens")) choice.tokens.reserve(tokens->size());
  each_object(fields, "tokens", [&](const StrictFields& token_fields) {
    read_token(token_fields, choice);
  });
  return choice;
}

void read_exchange(const StrictFields& fields, Exchange& out) {
  read(fields, "id", out.id);
  if (fields.find("source_id")) {
    std::uint64_t source_id = 0;
    read(fields, "source_id", source_id);
    out.source_id = source_id;
  }
  read_key(fields, out.key);
  read_bytes(fields, "session_id", out.session_id);
  read(fields, "start_unix_ns", out.start_unix_ns);
  read(fields, "intended_send_ns", out.intended_send_ns);
  read(fields, "actual_send_ns", out.actual_send_ns);
  read(fields, "first_byte_ns", out.first_byte_ns);
  read(fields, "end_ns", out.end_ns);
  if (const auto* request = fields.object("request")) read_request(fields.nested(*request, "request"), out.request);
  if (const auto* response = fields.object("response"))
    read_response(fields.nested(*response, "response"), out.response);
  each_object(fields, "choices", [&](const StrictFields& choice_fields) {
    out.choices.push_back(read_choice(choice_fields));
  });
  if (const auto* usage = fields.object("usage")) {
    const StrictFields usage_fields = fields.nested(*usage, "usage");
    read(usage_fields, "prompt_tokens", out.usage.prompt_tokens);
    read(usage_fields, "completion_tokens", out.usage.completion_tokens);
    read(usage_fields, "total_tokens", out.usage.total_tokens);
    read(usage_fields, "reasoning_tokens", out.usage.reasoning_tokens);
  }
  if (const auto* error = fields.object("error")) {
    const StrictFields error_fields = fields.nested(*error, "error");
    read_name(error_fields, "kind", out.error.kind, error_kind_from_string,
              "an error kind such as timeout or http_status");
    read(error_fields, "message", out.error.message);
  }
  read_labels(fields, out.labels);
  if (fields.find("expected")) read_bytes(fields, "expected", out.expected.emplace());
  read_bytes(fields, "dialect", out.dialect);
  read(fields, "decode_note", out.decode_note);
  read(fields, "retries", out.retries);
  read(fields, "in_flight_at_send", out.in_flight_at_send);
  read(fields, "in_flight_max", out.in_flight_max);
  if (const auto* server = fields.object("server")) described_json::read_object(*server, out.server);
  if (const auto* state = fields.object("server_state")) described_json::read_object(*state, out.server_state);
}

}  // namespace

TraceHeader header_from_json(const json::object& object) {
  TraceHeader header;
  try {
    const StrictFields fields(object);
    read(fields, "format_major", header.format_major);
    read(fields, "format_minor", header.format_minor);
    read_bytes(fields, "tool_version", header.tool_version);
    read(fields, "created_unix_ns", header.created_unix_ns);
    read_name(fields, "source", header.source, source_from_string, "recorded, replayed or imported");
    read_bytes(fields, "target", header.target);
    read_bytes(fields, "settings", header.settings);
    read_bytes(fields, "host", header.host);
    read_labels(fields, header.labels);
    read_bytes(fields, "server_info", header.server_info);
  } catch (const FieldError& e) {
    throw TraceError(e.what());
  }
  return header;
}

void exchange_from_json(const json::object& object, Exchange& out) {
  out = Exchange{};
  try {
    read_exchange(StrictFields(object), out);
  } catch (const FieldError& e) {
    throw TraceError(e.what());
  }
}

}  // namespace retrace
