// `retrace inspect`: what a trace holds, how big it is, and whether it is whole (the summary and
// its renderings are report/inspect_render.hpp's).
#include <iostream>
#include <memory>
#include <string>

#include "cli/commands.hpp"
#include "report/inspect_render.hpp"

namespace retrace::cli {

namespace {

int run_inspect(const std::string& path, bool as_json) {
  auto inspection = report::inspect_trace(path);
  std::cout << (as_json ? report::render_inspection_json(inspection)
                        : report::render_inspection_text(inspection));
  return kExitOk;
}

}  // namespace

void add_inspect(CLI::App& root, Registry& registry) {
  auto path = std::make_shared<std::string>();
  auto as_json = std::make_shared<bool>(false);
  CLI::App* command = root.add_subcommand(
      "inspect",
      "Summarise a trace: its header (format version, source, target, settings, host, labels), "
      "counts (exchanges, errors by kind, HTTP statuses, sessions, tokens and what kind they "
      "are), the time span, file size, decompressed size, compression ratio and bytes per token, "
      "whether the tail was torn (and how much was dropped from where), and whether the index "
      "is present.");
  command->footer("Example:\n  retrace inspect traces/gold-intents.rtrace --json | jq .counts");
  command->add_option("TRACE", *path, "the .rtrace file")->required();
  command->add_flag("--json", *as_json, "one JSON object on stdout, for machines");
  registry.add(command, [path, as_json] { return run_inspect(*path, *as_json); });
}

}  // namespace retrace::cli
