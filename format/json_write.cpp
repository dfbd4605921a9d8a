// Trace records as JSON (format/json.hpp): what `retrace export` prints.
#include "base/described_json.hpp"
#include "base/json_text.hpp"
#include "format/json.hpp"

namespace retrace {

namespace json = boost::json;

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

json::object request_to_json(const Request& request) {
  return json::object{{"method", bytes_to_json(request.method)},
                      {"target", bytes_to_json(request.target)},
                      {"headers", headers_to_json(request.headers)},
                      {"body", bytes_to_json(request.body)}};
}

json::object response_to_json(const Response& response) {
  json::array events;
  events.reserve(response.events.size());
  for (const auto& event : response.events)
    events.push_back(json::object{{"offset_ns", event.offset_ns}, {"data", bytes_to_json(event.data)}});
  return json::object{{"status", response.status},
                      {"headers", headers_to_json(response.headers)},
                      {"body", bytes_to_json(response.body)},
                      {"streamed", response.streamed},
                      {"events", std::move(events)}};
}

json::object token_to_json(const Choice& choice, const Token& token) {
  json::array top;
  top.reserve(token.top_count);
  for (const auto& alternative : choice.top(token))
    top.push_back(json::object{{"id", json_count(alternative.id)},
                               {"bytes", bytes_to_json(alternative.bytes)},
                               {"logprob", json_float(alternative.logprob)}});
  return json::object{{"id", json_count(token.id)},
                      {"bytes", bytes_to_json(token.bytes)},
                      {"logprob", token.has_logprob ? json_float(token.logprob) : json::value(nullptr)},
                      {"offset_ns", token.offset_ns},
                      {"top", std::move(top)}};
}

json::object choice_to_json(const Choice& choice) {
  json::array tokens;
  tokens.reserve(choice.tokens.size());
  for (const auto& token : choice.tokens) tokens.push_back(token_to_json(choice, token));
  json::object object{{"index", choice.index},
                      {"kind", to_string(choice.kind)},
                      {"finish_reason", bytes_to_json(choice.finish_reason)},
                      {"tokens", std::move(tokens)}};
  // The part fields only where they say something (format 1.3), so a content-only export reads
  // as it did before parts.
  if (choice.part != Part::content) object["part"] = to_string(choice.part);
  if (choice.part == Part::tool_call) {
    object["tool_call"] = choice.tool_call;
    object["tool_name"] = bytes_to_json(choice.tool_name);
  }
  if (!choice.values.empty()) {
    json::array values;
    values.reserve(choice.values.size());
    for (double value : choice.values) values.push_back(json::value(value));
    object["values"] = std::move(values);
  }
  return object;
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

namespace {

// Every negative number of `object` (and of the objects in it) made null.
json::object unknown_as_null(json::object object) {
  for (auto& [key, value] : object) {
    if (value.is_object()) value = unknown_as_null(std::move(value.get_object()));
    else if ((value.is_double() && value.get_double() < 0) || (value.is_int64() && value.get_int64() < 0)) value = nullptr;
  }
  return object;
}

}  // namespace

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
  object["request"] = request_to_json(exchange.request);
  object["response"] = response_to_json(exchange.response);
  json::array choices;
  choices.reserve(exchange.choices.size());
  for (const auto& choice : exchange.choices) choices.push_back(choice_to_json(choice));
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
  // Only where known (format 1.5, replay), so an older trace's export reads as it did.
  if (exchange.in_flight_at_send >= 0) object["in_flight_at_send"] = exchange.in_flight_at_send;
  if (exchange.in_flight_max >= 0) object["in_flight_max"] = exchange.in_flight_max;
  // Likewise (format 1.6): what the server said, and the run's series joined to the exchange.
  // A figure not known is -1 in the trace and null here (the JSON rule, base/json_text.hpp); a
  // reader takes null as not known again.
  if (exchange.server != ServerSaid{}) object["server"] = unknown_as_null(described_json::to_object(exchange.server));
  if (exchange.server_state != ServerState{})
    object["server_state"] = unknown_as_null(described_json::to_object(exchange.server_state));
  return object;
}

std::string header_line(const TraceHeader& header) {
  return json_text(json::object{{"header", to_json(header)}});
}

std::string exchange_line(const Exchange& exchange) {
  return json_text(json::object{{"exchange", to_json(exchange)}});
}

}  // namespace retrace
