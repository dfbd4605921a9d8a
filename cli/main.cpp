// retrace: record, replay and diff LLM inference traffic.
// main() reads top to bottom: build the command tree, parse, run the chosen command.
#include <csignal>
#include <cstdio>
#include <exception>
#include <iostream>

#include "cli/commands.hpp"
#include "cli/help.hpp"
#include "cli/outputs.hpp"
#include "commit.hpp"
#include "llm/derive_tokens.hpp"
#include "version.hpp"

int main(int argc, char** argv) {
  // A closed pipe (`retrace export t | head`) ends output quietly; writes then fail with EPIPE.
  std::signal(SIGPIPE, SIG_IGN);
  retrace::cli::check_stdout();  // a write that fails (a full disk) exits 2 (cli/outputs.hpp)
  retrace::llm::install_token_deriver();  // format 1.7's derived tokens (format/token_deriver.hpp)

  CLI::App app{
      "retrace records the traffic of LLM inference servers, replays it at any concurrency, rate "
      "or recorded timing, and pinpoints the first token at which two runs' outputs differ.",
      "retrace"};
  app.set_version_flag("-V,--version", std::string("retrace ") + retrace::kToolVersion +
                                           " (commit " + retrace::kGitCommit + ")");
  app.require_subcommand(1);
  app.footer(
      "Run `retrace help COMMAND` (or `retrace COMMAND --help`) for a command's options and an "
      "example, `retrace help --all` for every command's, `retrace help topics` for the guides (recording, "
      "replaying, comparing, repeatability, capacity, scale-out, errors, ...).\n"
      "Shell completion: `source <(retrace completion bash)` (packages install it).");

  // Commands are listed in the help in this order, under these headings.
  retrace::cli::Registry registry;
  retrace::cli::add_record(app, registry);
  retrace::cli::add_shadow(app, registry);
  retrace::cli::add_import(app, registry);
  retrace::cli::add_replay(app, registry);
  retrace::cli::add_merge(app, registry);
  retrace::cli::add_diff(app, registry);
  retrace::cli::add_study(app, registry);
  retrace::cli::add_sweep(app, registry);
  retrace::cli::add_bisect(app, registry);
  retrace::cli::add_inspect(app, registry);
  retrace::cli::add_cat(app, registry);
  retrace::cli::add_export(app, registry);
  retrace::cli::add_stats(app, registry);
  retrace::cli::add_serve(app, registry);
  retrace::cli::add_report(app, registry);
  retrace::cli::add_demo(app, registry);
  retrace::cli::add_help(app, registry);
  retrace::cli::add_completion(app, registry);
  retrace::cli::group_commands(
      app, {{"Capture", {{"record", "Record traffic through a reverse proxy in front of a server"},
                         {"shadow", "Try a candidate on live traffic: mirror, compare, gate"},
                         {"import", "Turn a dataset or a public serving trace into a trace of requests"}}},
            {"Replay", {{"replay", "Re-issue a trace at a concurrency, rate or recorded timing"},
                        {"merge", "Join the shards of one sharded replay into one run"}}},
            {"Compare", {{"diff", "Find where runs' outputs differ: the first divergent token"}}},
            {"Experiment", {{"study", "The repeatability experiment: concurrency × cache, repeated, with a control"},
                            {"sweep", "Replay at several concurrencies, repeated, with a summary"},
                            {"bisect", "Find the first concurrency, run or value whose outputs differ"}}},
            {"Inspect", {{"inspect", "Summarise a trace: header, counts, time span, sizes"},
                         {"cat", "Show a trace's exchanges for a person to read"},
                         {"export", "Print a trace as JSON lines (or CSV rows per request)"},
                         {"stats", "Latency and throughput figures of any trace"},
                         {"report", "A self-contained HTML report of a run, a sweep or a diff"}}},
            {"Simulate", {{"serve", "Run the built-in OpenAI-compatible server simulator"},
                          {"demo", "The whole experiment against the simulator, no setup"}}}});

  if (argc == 1) {  // a bare `retrace` asks what it can do
    std::cerr << app.help();
    return retrace::cli::kExitError;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return retrace::cli::finish_stdout(code == 0 ? 0 : retrace::cli::kExitError);
  }
  try {
    for (const auto& [command, run] : registry.commands())
      if (command->parsed()) return retrace::cli::finish_stdout(run());
  } catch (const std::exception& e) {
    std::cout.flush();
    std::cerr << "retrace: error: " << e.what() << "\n";
    return retrace::cli::kExitError;
  }
  return retrace::cli::kExitError;
}
