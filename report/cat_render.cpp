// `retrace cat`'s views of an exchange: see report/cat_render.hpp.
#include "report/cat_render.hpp"

#include <boost/json.hpp>

#include "base/json_text.hpp"
#include "base/text.hpp"
#include "format/json.hpp"
#include "format/output_tokens.hpp"
#include "report/text.hpp"

namespace retrace::report {

namespace json = boost::json;

namespace {

void write_heading(const Exchange& exchange, std::ostream& out) {
  out << "#" << exchange.id << "  " << exchange.request.method << " " << exchange.request.target;
  if (exchange.response.status != 0)
    out << "  status " << exchange.response.status;
  else if (exchange.error.kind == ErrorKind::none)
    out << "  (no response)";
  if (exchange.source_id) out << "  source #" << *exchange.source_id;
  for (const auto& label : exchange.labels) out << "  " << label.key << "=" << label.value;
  out << "\n";
}

void write_choice(const Choice& choice, std::ostream& out) {
  out << "  choice " << choice.index;
  if (choice.part == Part::tool_call)
    out << " tool call " << choice.tool_call << " " << printable(choice.tool_name);
  else if (choice.part != Part::content)
    out << " " << to_string(choice.part);
  out << " (" << choice.tokens.size() << " tokens, " << to_string(choice.kind);
  if (choice.part == Part::embedding) out << ", " << choice.values.size() << " values";
  if (!choice.finish_reason.empty()) out << ", finish " << choice.finish_reason;
  out << "): " << printable(output_text(choice), kCatShownBytes) << "\n";
}

json::value text_or_null(const std::string& text) {
  return text.empty() ? json::value(nullptr) : json::value(text);
}

json::object choice_json(const Choice& choice) {
  json::object view{{"index", choice.index},
                    {"part", to_string(choice.part)},
                    {"tokens", choice.tokens.size()},
                    {"kind", to_string(choice.kind)},
                    {"finish_reason", text_or_null(choice.finish_reason)},
                    {"text", bytes_to_json(output_text(choice))}};
  if (choice.part == Part::tool_call) {
    view["tool_call"] = choice.tool_call;
    view["tool_name"] = choice.tool_name;
  }
  if (choice.part == Part::embedding) view["values"] = choice.values.size();
  return view;
}

}  // namespace

void write_exchange_text(const Exchange& exchange, std::ostream& out) {
  write_heading(exchange, out);
  if (exchange.error.kind != ErrorKind::none)
    out << "  error: " << to_string(exchange.error.kind) << ": "
        << printable(exchange.error.message, kCatShownBytes) << "\n";
  out << "  request: " << printable(request_summary(exchange.request), kCatShownBytes) << "\n";
  // The decoder keeps each choice's content part (its finish reason, "the answer" live sessions
  // and --expect read); a choice that answered with tool calls alone has it empty, and a line
  // for it read as an empty answer: it is shown only when the choice has nothing else.
  const auto& choices = exchange.choices;
  for (std::size_t at = 0; at < choices.size(); ++at) {
    const Choice& choice = choices[at];
    bool beside_others = (at > 0 && choices[at - 1].index == choice.index) ||
                         (at + 1 < choices.size() && choices[at + 1].index == choice.index);
    if (choice.part == Part::content && choice.tokens.empty() && beside_others) continue;
    write_choice(choice, out);
  }
  if (!exchange.choices.empty() || exchange.usage.completion_tokens >= 0) {
    auto tokens = output_tokens(exchange);
    out << "  output tokens: " << tokens.count << (tokens.from_usage ? " (server usage)" : " (counted)")
        << "\n";
  }
  if (exchange.choices.empty() && exchange.response.status != 0)
    out << "  (no decoded output" << (exchange.decode_note.empty() ? "" : ": ")
        << exchange.decode_note << ")\n";
  if (exchange.expected) out << "  expected: " << printable(*exchange.expected, kCatShownBytes) << "\n";
}

json::object exchange_view_json(const Exchange& exchange) {
  json::object labels;
  for (const auto& label : exchange.labels) labels[label.key] = label.value;
  json::array choices;
  for (const auto& choice : exchange.choices) choices.push_back(choice_json(choice));
  bool failed = exchange.error.kind != ErrorKind::none;
  return json::object{
      {"id", exchange.id},
      {"source_id", exchange.source_id ? json::value(*exchange.source_id) : json::value(nullptr)},
      {"method", exchange.request.method},
      {"target", exchange.request.target},
      {"status", exchange.response.status ? json::value(std::uint64_t{exchange.response.status})
                                          : json::value(nullptr)},
      {"error", failed ? json::value(json::object{{"kind", to_string(exchange.error.kind)},
                                                  {"message", exchange.error.message}})
                       : json::value(nullptr)},
      {"labels", std::move(labels)},
      {"request", bytes_to_json(request_summary(exchange.request, 1'000'000))},
      {"choices", std::move(choices)},
      {"decode_note", text_or_null(exchange.decode_note)},
      {"expected", exchange.expected ? bytes_to_json(*exchange.expected) : json::value(nullptr)}};
}

std::string cat_json_opening(const std::string& path) {
  return "{\"schema_version\":" + std::to_string(kJsonSchemaVersion) +
         ",\"trace\":" + json_text(json::value(path)) + ",\"exchanges\":[";
}

std::string cat_json_closing(bool torn) {
  return std::string("],\"torn\":") + (torn ? "true" : "false") + "}\n";
}

}  // namespace retrace::report
