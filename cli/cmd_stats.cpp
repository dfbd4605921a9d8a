// `retrace stats TRACE...`: the replay report (throughput, TTFT, ITL, TPOT, e2e) of any trace.
#include <iostream>

#include "cli/commands.hpp"
#include "format/trace.hpp"
#include "replay/replay.hpp"
#include "report/replay_report.hpp"

namespace retrace::cli {
namespace {

struct StatsArgs {
  std::vector<std::string> traces;
  bool json = false;
  std::string slo;
};

int run(const StatsArgs& args) {
  replay::Slo slo;
  if (!args.slo.empty()) slo = replay::parse_slo(args.slo);
  std::vector<std::string> json_reports;
  for (std::size_t i = 0; i < args.traces.size(); ++i) {
    const auto& path = args.traces[i];
    Recovery recovery;
    auto stats = replay::stats_of_trace(path, slo, &recovery);
    if (!recovery.clean())
      std::cerr << "retrace: warning: " << path << ": " << describe(recovery)
                << "; figures cover the readable exchanges\n";
    report::StatsContext context;
    context.title = path;
    if (args.json) {
      json_reports.push_back(report::render_stats_json(stats, context));
    } else {
      if (i) std::cout << "\n";
      std::cout << report::render_stats_text(stats, context);
    }
  }
  if (args.json) std::cout << report::join_json_reports(json_reports);
  return kExitOk;
}

}  // namespace

void add_stats(CLI::App& root, Registry& registry) {
  auto args = std::make_shared<StatsArgs>();
  auto* command = root.add_subcommand(
      "stats", "Latency and throughput figures of any trace (recorded, replayed or imported).");
  command->footer("Example:\n  retrace stats run.rtrace --slo ttft:200ms,tpot:50ms --json");
  command->add_option("traces", args->traces, "Trace files")->required()->check(CLI::ExistingFile);
  command->add_flag("--json", args->json, "Print JSON (an array when several traces are given)");
  command->add_option("--slo", args->slo, "Goodput objective, e.g. ttft:200ms,tpot:50ms,e2e:2s");
  registry.add(command, [args] { return run(*args); });
}

}  // namespace retrace::cli
