// `retrace cat`: a human view of a trace's exchanges.
#include <iostream>

#include "cli/commands.hpp"
#include "format/json.hpp"
#include "format/output_tokens.hpp"
#include "base/json_text.hpp"
#include "base/text.hpp"
#include "format/trace.hpp"
#include "report/text.hpp"

namespace retrace::cli {

namespace {

// Long texts are cut (printable, base/text.hpp) at this many bytes.
constexpr std::size_t kShownBytes = 400;

void show(const Exchange& exchange, std::ostream& out) {
  out << "#" << exchange.id << "  " << exchange.request.method << " " << exchange.request.target;
  if (exchange.response.status != 0)
    out << "  status " << exchange.response.status;
  else if (exchange.error.kind == ErrorKind::none)
    out << "  (no response)";
  if (exchange.source_id) out << "  source #" << *exchange.source_id;
  for (const auto& label : exchange.labels) out << "  " << label.key << "=" << label.value;
  out << "\n";
  if (exchange.error.kind != ErrorKind::none)
    out << "  error: " << to_string(exchange.error.kind) << ": " << printable(exchange.error.message, kShownBytes)
        << "\n";
  out << "  request: " << printable(request_summary(exchange.request), kShownBytes) << "\n";
  for (const auto& choice : exchange.choices) {
    out << "  choice " << choice.index;
    if (choice.part == Part::tool_call)
      out << " tool call " << choice.tool_call << " " << printable(choice.tool_name);
    else if (choice.part != Part::content)
      out << " " << to_string(choice.part);
    out << " (" << choice.tokens.size() << " tokens, " << to_string(choice.kind);
    if (choice.part == Part::embedding) out << ", " << choice.values.size() << " values";
    if (!choice.finish_reason.empty()) out << ", finish " << choice.finish_reason;
    out << "): " << printable(output_text(choice), kShownBytes) << "\n";
  }
  if (!exchange.choices.empty() || exchange.usage.completion_tokens >= 0) {
    auto tokens = output_tokens(exchange);
    out << "  output tokens: " << tokens.count << (tokens.from_usage ? " (server usage)" : " (counted)")
        << "\n";
  }
  if (exchange.choices.empty() && exchange.response.status != 0)
    out << "  (no decoded output" << (exchange.decode_note.empty() ? "" : ": ")
        << exchange.decode_note << ")\n";
  if (exchange.expected) out << "  expected: " << printable(*exchange.expected, kShownBytes) << "\n";
}

// The same view as JSON: what `show` prints, with the full texts (no cut, no escapes).
boost::json::object view_json(const Exchange& exchange) {
  namespace json = boost::json;
  auto text_or_null = [](const std::string& text) {
    return text.empty() ? json::value(nullptr) : json::value(text);
  };
  json::object labels;
  for (const auto& label : exchange.labels) labels[label.key] = label.value;
  json::array choices;
  for (const auto& choice : exchange.choices) {
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
    choices.push_back(std::move(view));
  }
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

int run_cat(const std::string& path, const std::vector<std::uint64_t>& ids, bool as_json) {
  TraceReader reader(path);
  Exchange exchange;
  std::vector<bool> found(ids.size(), false);
  std::uint64_t shown = 0;
  if (as_json)
    std::cout << "{\"schema_version\":" << report::kJsonSchemaVersion
              << ",\"trace\":" << json_text(boost::json::value(path)) << ",\"exchanges\":[";
  while (reader.next(exchange)) {
    if (!ids.empty()) {
      bool wanted = false;
      for (std::size_t i = 0; i < ids.size(); ++i)
        if (ids[i] == exchange.id) wanted = found[i] = true;
      if (!wanted) continue;
    }
    if (as_json) {
      // One document, streamed: exchanges are written as they are read, never held together.
      std::cout << (shown++ > 0 ? "," : "") << json_text(view_json(exchange));
    } else {
      if (shown++ > 0) std::cout << "\n";
      show(exchange, std::cout);
    }
    if (!std::cout) return kExitOk;  // stdout closed
  }
  const Recovery& recovery = reader.recovery();
  if (as_json) std::cout << "],\"torn\":" << (recovery.torn ? "true" : "false") << "}\n";
  std::cout.flush();
  if (!recovery.clean())
    std::cerr << "retrace: warning: " << path << ": " << describe(recovery) << "\n";
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (!found[i]) {
      std::cerr << "retrace: error: no exchange with id " << ids[i] << " in " << path
                << " (see `retrace inspect " << path << "` for the count)\n";
      return kExitError;
    }
  }
  return kExitOk;
}

}  // namespace

void add_cat(CLI::App& root, Registry& registry) {
  auto path = std::make_shared<std::string>();
  auto ids = std::make_shared<std::vector<std::uint64_t>>();
  auto as_json = std::make_shared<bool>(false);
  CLI::App* command = root.add_subcommand(
      "cat",
      "Show a trace's exchanges for a person to read: id, method and target, status or error, "
      "the request (last user message or prompt), each choice's output text with its token "
      "count, token kind and finish reason, and the expected answer where the dataset gave one.");
  command->footer("Example:\n  retrace cat traces/gold-intents.rtrace --id 3");
  command->add_option("TRACE", *path, "the .rtrace file")->required();
  command->add_option("--id", *ids, "show only this exchange id (repeatable)");
  command->add_flag("--json", *as_json,
                    "one JSON document: {schema_version, trace, exchanges: [...], torn}, with the "
                    "full texts");
  registry.add(command, [path, ids, as_json] { return run_cat(*path, *ids, *as_json); });
}

}  // namespace retrace::cli
