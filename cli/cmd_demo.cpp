// `retrace demo`: the README's main command — the whole experiment against the built-in simulator.
#include <filesystem>
#include <iostream>

#include "cli/commands.hpp"
#include "cli/datasets.hpp"
#include "base/stop_signals.hpp"
#include "demo/demo.hpp"

namespace retrace::cli {

void add_demo(CLI::App& root, Registry& registry) {
  auto options = std::make_shared<demo::DemoOptions>();
  auto dir = std::make_shared<std::string>();
  auto traces = std::make_shared<std::string>();
  CLI::App* command = root.add_subcommand(
      "demo",
      "Show what retrace does, with no setup: starts the built-in simulator (`retrace serve`), "
      "records the 20 gold questions through `retrace record`, sweeps them at concurrency 1, 16 "
      "and 32 three times each, then repeats with batch variance on over open-ended prompts, "
      "shows where outputs first differ, and bisects the concurrency at which they start to. "
      "Everything it writes goes to one directory, named at the end.");
  command->add_option("--dir", *dir,
                      "Where to write (default: a new retrace-demo-YYYYmmdd-HHMMSS here)");
  command->add_option("--traces", *traces,
                      "A folder holding gold-intents.jsonl, gold-intents.answers.jsonl and "
                      "open-ended.jsonl to use instead of the copies built into retrace (which "
                      "are written to DIR/datasets)");
  command->add_flag("--no-stream", options->no_stream,
                    "Replay without streaming (no TTFT or inter-token latency)");
  command->add_flag("--quick", options->quick, "Fewer levels and repeats (concurrency 1,8 × 2)");
  registry.add(command, [options, dir, traces] {
    options->dir = *dir;
    options->traces = *traces;
    options->datasets.assign(embedded_datasets().begin(), embedded_datasets().end());
    std::error_code ec;
    options->self = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (ec) throw std::runtime_error("cannot find this executable through /proc/self/exe: " + ec.message());
    std::atomic<bool> stop{false};
    options->stop = &stop;
    StopOnSignals signals(stop, "\nretrace: stopping: cutting the run in flight (Ctrl-C again to quit at once)\n");
    return demo::run_demo(*options, std::cout, std::cerr);
  });
}

}  // namespace retrace::cli
