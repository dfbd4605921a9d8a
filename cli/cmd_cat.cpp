// `retrace cat`: a human view of a trace's exchanges (the views themselves are
// report/cat_render.hpp's); --id picks exchanges, and an id not in the trace is an error.
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "base/json_text.hpp"
#include "cli/commands.hpp"
#include "format/trace.hpp"
#include "report/cat_render.hpp"

namespace retrace::cli {

namespace {

int run_cat(const std::string& path, const std::vector<std::uint64_t>& ids, bool as_json) {
  TraceReader reader(path);
  Exchange exchange;
  std::vector<bool> found(ids.size(), false);
  std::uint64_t shown = 0;
  if (as_json)
    std::cout << report::cat_json_opening(path);
  while (reader.next(exchange)) {
    if (!ids.empty()) {
      bool wanted = false;
      for (std::size_t i = 0; i < ids.size(); ++i)
        if (ids[i] == exchange.id) wanted = found[i] = true;
      if (!wanted) continue;
    }
    if (as_json) {
      // One document, streamed: exchanges are written as they are read, never held together.
      std::cout << (shown++ > 0 ? "," : "") << json_text(report::exchange_view_json(exchange));
    } else {
      if (shown++ > 0) std::cout << "\n";
      report::write_exchange_text(exchange, std::cout);
    }
    if (!std::cout) return kExitOk;  // stdout closed
  }
  const Recovery& recovery = reader.recovery();
  if (as_json) std::cout << report::cat_json_closing(recovery.torn);
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
