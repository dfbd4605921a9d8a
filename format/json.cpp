#include "format/json.hpp"
#include "format/wire_syntax.hpp"

#include "base/json_text.hpp"
#include "base/text.hpp"

#include <array>
#include <charconv>

namespace retrace {

namespace json = boost::json;

namespace {
constexpr char kBase64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
}

std::string base64_encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  auto at = [&](std::size_t k) { return static_cast<unsigned char>(bytes[k]); };
  for (; i + 3 <= bytes.size(); i += 3) {
    std::uint32_t v = (at(i) << 16) | (at(i + 1) << 8) | at(i + 2);
    out += kBase64[(v >> 18) & 63];
    out += kBase64[(v >> 12) & 63];
    out += kBase64[(v >> 6) & 63];
    out += kBase64[v & 63];
  }
  if (std::size_t rest = bytes.size() - i) {
    std::uint32_t v = at(i) << 16;
    if (rest == 2) v |= at(i + 1) << 8;
    out += kBase64[(v >> 18) & 63];
    out += kBase64[(v >> 12) & 63];
    out += rest == 2 ? kBase64[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::optional<std::string> base64_decode(std::string_view text) {
  std::array<int, 256> value;
  value.fill(-1);
  for (int k = 0; k < 64; ++k) value[static_cast<unsigned char>(kBase64[k])] = k;
  while (!text.empty() && text.back() == '=') text.remove_suffix(1);
  std::string out;
  out.reserve(text.size() * 3 / 4);
  std::uint32_t accumulator = 0;
  int bits = 0;
  for (char c : text) {
    int v = value[static_cast<unsigned char>(c)];
    if (v < 0) return std::nullopt;
    accumulator = (accumulator << 6) | static_cast<std::uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((accumulator >> bits) & 0xFF);
    }
  }
  return out;
}

json::value bytes_to_json(std::string_view bytes) {
  if (is_valid_utf8(bytes)) return json::string(bytes);
  json::object marker;
  marker["base64"] = base64_encode(bytes);
  return marker;
}

std::string bytes_from_json(const json::value& value, std::string_view field) {
  if (const auto* text = value.if_string()) return std::string(*text);
  if (const auto* object = value.if_object()) {
    if (const auto* encoded = object->if_contains("base64"); encoded && encoded->is_string()) {
      if (auto decoded = base64_decode(encoded->get_string())) return *decoded;
      throw TraceError("field \"" + std::string(field) + "\": invalid base64");
    }
  }
  throw TraceError("field \"" + std::string(field) +
                   "\": expected a string or {\"base64\": ...}");
}

namespace {

json::object labels_to_json(const std::vector<Label>& labels) {
  json::object object;
  // A key is a name, so it is replaced where it is not UTF-8; the value is bytes like the rest.
  for (const auto& label : labels) object[utf8_or_replaced(label.key)] = bytes_to_json(label.value);
  return object;
}

json::array headers_to_json(const std::vector<HttpHeader>& headers) {
  json::array array;
  array.reserve(headers.size());
  for (const auto& header : headers)
    array.push_back(json::array{bytes_to_json(header.name), bytes_to_json(header.value)});
  return array;
}

// Readers of the JSON view: absent fields keep the default; mistyped ones throw, naming the field.
[[noreturn]] void mistyped(std::string_view field, std::string_view expected) {
  throw TraceError("field \"" + std::string(field) + "\": expected " + std::string(expected));
}

const json::value* find(const json::object& object, std::string_view field) {
  const json::value* value = object.if_contains(field);
  return value && !value->is_null() ? value : nullptr;
}

template <class Int>
void read_int(const json::object& object, std::string_view field, Int& out) {
  if (const auto* value = find(object, field)) {
    if (value->is_int64())
      out = static_cast<Int>(value->get_int64());
    else if (value->is_uint64())
      out = static_cast<Int>(value->get_uint64());
    else
      mistyped(field, "an integer");
  }
}

void read_string(const json::object& object, std::string_view field, std::string& out) {
  if (const auto* value = find(object, field)) {
    if (!value->is_string()) mistyped(field, "a string");
    out.assign(value->get_string().data(), value->get_string().size());
  }
}

void read_bytes(const json::object& object, std::string_view field, std::string& out) {
  if (const auto* value = find(object, field)) out = bytes_from_json(*value, field);
}

void read_bool(const json::object& object, std::string_view field, bool& out) {
  if (const auto* value = find(object, field)) {
    if (!value->is_bool()) mistyped(field, "true or false");
    out = value->get_bool();
  }
}

void read_float(const json::object& object, std::string_view field, float& out) {
  if (const auto* value = find(object, field)) {
    if (!value->is_number()) mistyped(field, "a number");
    out = static_cast<float>(value->to_number<double>());
  }
}

const json::object* read_object(const json::object& object, std::string_view field) {
  const auto* value = find(object, field);
  if (!value) return nullptr;
  if (!value->is_object()) mistyped(field, "an object");
  return &value->get_object();
}

const json::array* read_array(const json::object& object, std::string_view field) {
  const auto* value = find(object, field);
  if (!value) return nullptr;
  if (!value->is_array()) mistyped(field, "an array");
  return &value->get_array();
}

void read_labels(const json::object& object, std::vector<Label>& out) {
  out.clear();
  if (const auto* labels = read_object(object, "labels")) {
    for (const auto& member : *labels) {
      out.push_back(Label{std::string(member.key()), bytes_from_json(member.value(), "labels")});
    }
  }
}

void read_headers(const json::object& object, std::vector<HttpHeader>& out) {
  out.clear();
  if (const auto* headers = read_array(object, "headers")) {
    for (const auto& header : *headers) {
      const auto* pair = header.if_array();
      if (!pair || pair->size() != 2) mistyped("headers", "[name, value] pairs");
      out.push_back(HttpHeader{bytes_from_json((*pair)[0], "headers"), bytes_from_json((*pair)[1], "headers")});
    }
  }
}

std::optional<std::uint64_t> parse_hex64(std::string_view hex) {
  std::uint64_t value = 0;
  auto [end, error] = std::from_chars(hex.data(), hex.data() + hex.size(), value, 16);
  if (error != std::errc() || end != hex.data() + hex.size()) return std::nullopt;
  return value;
}

}  // namespace

json::object to_json(const TraceHeader& header) {
  json::object object;
  object["format_major"] = header.format_major;
  object["format_minor"] = header.format_minor;
  object["tool_version"] = bytes_to_json(header.tool_version);
  object["created_unix_ns"] = header.created_unix_ns;
  object["source"] = to_string(header.source);
  object["target"] = bytes_to_json(header.target);
  object["settings"] = bytes_to_json(header.settings);
  object["host"] = bytes_to_json(header.host);
  object["labels"] = labels_to_json(header.labels);
  object["server_info"] = bytes_to_json(header.server_info);
  return object;
}

json::object to_json(const Exchange& exchange) {
  json::object object;
  object["id"] = exchange.id;
  object["source_id"] = exchange.source_id ? json::value(*exchange.source_id) : json::value(nullptr);
  object["key"] = exchange.key.hex();
  object["session_id"] = bytes_to_json(exchange.session_id);
  object["start_unix_ns"] = exchange.start_unix_ns;
  object["intended_send_ns"] = exchange.intended_send_ns;
  object["actual_send_ns"] = exchange.actual_send_ns;
  object["first_byte_ns"] = json_count(exchange.first_byte_ns);
  object["end_ns"] = json_count(exchange.end_ns);

  json::object request;
  request["method"] = bytes_to_json(exchange.request.method);
  request["target"] = bytes_to_json(exchange.request.target);
  request["headers"] = headers_to_json(exchange.request.headers);
  request["body"] = bytes_to_json(exchange.request.body);
  object["request"] = std::move(request);

  json::object response;
  response["status"] = exchange.response.status;
  response["headers"] = headers_to_json(exchange.response.headers);
  response["body"] = bytes_to_json(exchange.response.body);
  response["streamed"] = exchange.response.streamed;
  json::array events;
  events.reserve(exchange.response.events.size());
  for (const auto& event : exchange.response.events)
    events.push_back(json::object{{"offset_ns", event.offset_ns}, {"data", bytes_to_json(event.data)}});
  response["events"] = std::move(events);
  object["response"] = std::move(response);

  json::array choices;
  choices.reserve(exchange.choices.size());
  for (const auto& choice : exchange.choices) {
    json::array tokens;
    tokens.reserve(choice.tokens.size());
    for (const auto& token : choice.tokens) {
      json::object token_object;
      token_object["id"] = json_count(token.id);
      token_object["bytes"] = bytes_to_json(token.bytes);
      token_object["logprob"] = token.has_logprob ? json_float(token.logprob) : json::value(nullptr);
      token_object["offset_ns"] = token.offset_ns;
      json::array top;
      top.reserve(token.top.size());
      for (const auto& alternative : token.top)
        top.push_back(json::object{{"id", json_count(alternative.id)},
                                   {"bytes", bytes_to_json(alternative.bytes)},
                                   {"logprob", json_float(alternative.logprob)}});
      token_object["top"] = std::move(top);
      tokens.push_back(std::move(token_object));
    }
    json::object choice_object{{"index", choice.index},
                               {"kind", to_string(choice.kind)},
                               {"finish_reason", bytes_to_json(choice.finish_reason)},
                               {"tokens", std::move(tokens)}};
    // The part fields only where they say something (format 1.3), so a content-only export reads
    // as it did before parts.
    if (choice.part != Part::content) choice_object["part"] = to_string(choice.part);
    if (choice.part == Part::tool_call) {
      choice_object["tool_call"] = choice.tool_call;
      choice_object["tool_name"] = bytes_to_json(choice.tool_name);
    }
    if (!choice.values.empty()) {
      json::array values;
      values.reserve(choice.values.size());
      for (double value : choice.values) values.push_back(json::value(value));
      choice_object["values"] = std::move(values);
    }
    choices.push_back(std::move(choice_object));
  }
  object["choices"] = std::move(choices);

  object["usage"] = json::object{{"prompt_tokens", json_count(exchange.usage.prompt_tokens)},
                                 {"completion_tokens", json_count(exchange.usage.completion_tokens)},
                                 {"total_tokens", json_count(exchange.usage.total_tokens)}};
  if (exchange.usage.reasoning_tokens >= 0)
    object["usage"].get_object()["reasoning_tokens"] = exchange.usage.reasoning_tokens;
  object["error"] = json::object{{"kind", to_string(exchange.error.kind)},
                                 {"message", utf8_or_replaced(exchange.error.message)}};
  object["labels"] = labels_to_json(exchange.labels);
  object["expected"] = exchange.expected ? bytes_to_json(*exchange.expected) : json::value(nullptr);
  object["dialect"] = bytes_to_json(exchange.dialect);
  // Notes and messages quote what arrived, which need not be UTF-8; JSON text must be (so that
  // `export | import` reads its own output), and they are for reading: replaced, not encoded.
  object["decode_note"] = utf8_or_replaced(exchange.decode_note);
  object["retries"] = exchange.retries;
  return object;
}

TraceHeader header_from_json(const json::object& object) {
  TraceHeader header;
  read_int(object, "format_major", header.format_major);
  read_int(object, "format_minor", header.format_minor);
  read_bytes(object, "tool_version", header.tool_version);
  read_int(object, "created_unix_ns", header.created_unix_ns);
  std::string source;
  read_string(object, "source", source);
  if (!source.empty()) {
    auto parsed = source_from_string(source);
    if (!parsed) mistyped("source", "recorded, replayed or imported");
    header.source = *parsed;
  }
  read_bytes(object, "target", header.target);
  read_bytes(object, "settings", header.settings);
  read_bytes(object, "host", header.host);
  read_labels(object, header.labels);
  read_bytes(object, "server_info", header.server_info);
  return header;
}

void exchange_from_json(const json::object& object, Exchange& out) {
  out = Exchange{};
  read_int(object, "id", out.id);
  if (const auto* value = find(object, "source_id")) {
    std::uint64_t source_id = 0;
    read_int(object, "source_id", source_id);
    out.source_id = source_id;
    (void)value;
  }
  std::string key;
  read_string(object, "key", key);
  if (!key.empty()) {
    auto hi = key.size() == 32 ? parse_hex64(std::string_view(key).substr(0, 16)) : std::nullopt;
    auto lo = key.size() == 32 ? parse_hex64(std::string_view(key).substr(16)) : std::nullopt;
    if (!hi || !lo) mistyped("key", "32 hex digits");
    out.key = RequestKey{*hi, *lo};
  }
  read_bytes(object, "session_id", out.session_id);
  read_int(object, "start_unix_ns", out.start_unix_ns);
  read_int(object, "intended_send_ns", out.intended_send_ns);
  read_int(object, "actual_send_ns", out.actual_send_ns);
  read_int(object, "first_byte_ns", out.first_byte_ns);
  read_int(object, "end_ns", out.end_ns);

  if (const auto* request = read_object(object, "request")) {
    read_bytes(*request, "method", out.request.method);
    read_bytes(*request, "target", out.request.target);
    read_headers(*request, out.request.headers);
    read_bytes(*request, "body", out.request.body);
    if (auto unsendable = wire_syntax_error(out.request); !unsendable.empty())
      throw TraceError("\"request\" cannot go on the wire: " + unsendable +
                       " (CR, LF and other control bytes would start lines of their own)");
  }
  if (const auto* response = read_object(object, "response")) {
    read_int(*response, "status", out.response.status);
    read_headers(*response, out.response.headers);
    read_bytes(*response, "body", out.response.body);
    read_bool(*response, "streamed", out.response.streamed);
    if (const auto* events = read_array(*response, "events")) {
      for (const auto& value : *events) {
        if (!value.is_object()) mistyped("events", "objects");
        Event event;
        read_int(value.get_object(), "offset_ns", event.offset_ns);
        read_bytes(value.get_object(), "data", event.data);
        out.response.events.push_back(std::move(event));
      }
    }
  }
  if (const auto* choices = read_array(object, "choices")) {
    for (const auto& value : *choices) {
      if (!value.is_object()) mistyped("choices", "objects");
      const auto& choice_object = value.get_object();
      Choice choice;
      read_int(choice_object, "index", choice.index);
      std::string kind;
      read_string(choice_object, "kind", kind);
      if (!kind.empty()) {
        auto parsed = token_kind_from_string(kind);
        if (!parsed) mistyped("kind", "none, text_deltas, logprob_tokens or token_ids");
        choice.kind = *parsed;
      }
      read_bytes(choice_object, "finish_reason", choice.finish_reason);
      std::string part;
      read_string(choice_object, "part", part);
      if (!part.empty()) {
        auto parsed = part_from_string(part);
        if (!parsed) mistyped("part", "content, reasoning, refusal, tool_call or embedding");
        choice.part = *parsed;
      }
      read_int(choice_object, "tool_call", choice.tool_call);
      read_bytes(choice_object, "tool_name", choice.tool_name);
      if (const auto* values = read_array(choice_object, "values")) {
        choice.values.reserve(values->size());
        for (const auto& value : *values) {
          if (!value.is_number()) mistyped("values", "numbers");
          choice.values.push_back(value.to_number<double>());
        }
      }
      if (const auto* tokens = read_array(choice_object, "tokens")) {
        choice.tokens.reserve(tokens->size());
        for (const auto& token_value : *tokens) {
          if (!token_value.is_object()) mistyped("tokens", "objects");
          const auto& token_object = token_value.get_object();
          Token token;
          read_int(token_object, "id", token.id);
          read_bytes(token_object, "bytes", token.bytes);
          if (find(token_object, "logprob")) {
            token.has_logprob = true;
            read_float(token_object, "logprob", token.logprob);
          }
          read_int(token_object, "offset_ns", token.offset_ns);
          if (const auto* top = read_array(token_object, "top")) {
            for (const auto& alternative_value : *top) {
              if (!alternative_value.is_object()) mistyped("top", "objects");
              Alternative alternative;
              read_int(alternative_value.get_object(), "id", alternative.id);
              read_bytes(alternative_value.get_object(), "bytes", alternative.bytes);
              read_float(alternative_value.get_object(), "logprob", alternative.logprob);
              token.top.push_back(std::move(alternative));
            }
          }
          choice.tokens.push_back(std::move(token));
        }
      }
      out.choices.push_back(std::move(choice));
    }
  }
  if (const auto* usage = read_object(object, "usage")) {
    read_int(*usage, "prompt_tokens", out.usage.prompt_tokens);
    read_int(*usage, "completion_tokens", out.usage.completion_tokens);
    read_int(*usage, "total_tokens", out.usage.total_tokens);
    read_int(*usage, "reasoning_tokens", out.usage.reasoning_tokens);
  }
  if (const auto* error = read_object(object, "error")) {
    std::string kind;
    read_string(*error, "kind", kind);
    if (!kind.empty()) {
      auto parsed = error_kind_from_string(kind);
      if (!parsed) mistyped("error.kind", "an error kind such as timeout or http_status");
      out.error.kind = *parsed;
    }
    read_string(*error, "message", out.error.message);
  }
  read_labels(object, out.labels);
  if (find(object, "expected")) {
    out.expected.emplace();
    read_bytes(object, "expected", *out.expected);
  }
  read_bytes(object, "dialect", out.dialect);
  read_string(object, "decode_note", out.decode_note);
  read_int(object, "retries", out.retries);
}

std::string header_line(const TraceHeader& header) {
  return json_text(json::object{{"header", to_json(header)}});
}

std::string exchange_line(const Exchange& exchange) {
  return json_text(json::object{{"exchange", to_json(exchange)}});
}

namespace {

std::string cut(std::string text, std::size_t max_chars) {
  if (text.size() <= max_chars) return text;
  text.resize(utf8_whole_prefix(std::string_view(text).substr(0, max_chars)));
  return text + "…";
}

// Chat content is a string or a list of parts; the text parts are what a person reads.
std::string content_text(const json::value& content) {
  if (content.is_string()) return std::string(content.get_string());
  std::string text;
  if (const auto* parts = content.if_array())
    for (const auto& part : *parts)
      if (const auto* object = part.if_object())
        if (const auto* part_text = object->if_contains("text"); part_text && part_text->is_string())
          text += part_text->get_string();
  return text;
}

}  // namespace

std::string request_summary(const Request& request, std::size_t max_chars) {
  boost::json::error_code error;
  json::value body = json::parse(request.body, error);
  if (!error && body.is_object()) {
    const auto& object = body.get_object();
    if (const auto* messages = object.if_contains("messages"); messages && messages->is_array()) {
      const auto& list = messages->get_array();
      for (auto it = list.rbegin(); it != list.rend(); ++it) {
        const auto* message = it->if_object();
        if (!message) continue;
        const auto* role = message->if_contains("role");
        const auto* content = message->if_contains("content");
        if (role && role->is_string() && role->get_string() == "user" && content)
          return cut(content_text(*content), max_chars);
      }
    }
    if (const auto* prompt = object.if_contains("prompt")) {
      if (prompt->is_string()) return cut(std::string(prompt->get_string()), max_chars);
      if (prompt->is_array() && !prompt->get_array().empty() && prompt->get_array()[0].is_string())
        return cut(std::string(prompt->get_array()[0].get_string()), max_chars);
    }
  }
  std::string raw = is_valid_utf8(request.body) ? request.body
                                                : "<" + std::to_string(request.body.size()) +
                                                      " bytes of binary data>";
  return cut(std::move(raw), max_chars);
}

std::string output_text(const Choice& choice) {
  std::string text;
  for (const auto& token : choice.tokens) text += token.bytes;
  return text;
}

}  // namespace retrace
