// retrace: record, replay and diff LLM inference traffic.
// main() reads top to bottom: build the command tree, parse, run the chosen command.
#include <csignal>
#include <cstdio>
#include <exception>
#include <iostream>

#include "cli/commands.hpp"
#include "version.hpp"

int main(int argc, char** argv) {
  // A closed pipe (`retrace export t | head`) ends output quietly; writes then fail with EPIPE.
  std::signal(SIGPIPE, SIG_IGN);

  CLI::App app{
      "retrace records the traffic of LLM inference servers, replays it at any concurrency, rate "
      "or recorded timing, and pinpoints the first token at which two runs' outputs differ.",
      "retrace"};
  app.set_version_flag("--version", std::string("retrace ") + retrace::kToolVersion);
  app.require_subcommand(1);
  app.footer("Run `retrace COMMAND --help` for a command's options and an example.");

  retrace::cli::Registry registry;
  retrace::cli::add_import(app, registry);
  retrace::cli::add_export(app, registry);
  retrace::cli::add_inspect(app, registry);
  retrace::cli::add_cat(app, registry);
  retrace::cli::add_sweep(app, registry);
  retrace::cli::add_bisect(app, registry);
  retrace::cli::add_demo(app, registry);
  retrace::cli::add_record(app, registry);
  retrace::cli::add_replay(app, registry);
  retrace::cli::add_stats(app, registry);
  retrace::cli::add_serve(app, registry);
  retrace::cli::add_diff(app, registry);
  retrace::cli::add_report(app, registry);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : retrace::cli::kExitError;
  }
  try {
    for (const auto& [command, run] : registry.commands())
      if (command->parsed()) return run();
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::cerr << "retrace: error: " << e.what() << "\n";
    return retrace::cli::kExitError;
  }
  return retrace::cli::kExitError;
}
