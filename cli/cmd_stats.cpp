// `retrace stats TRACE...`: the replay report (throughput, TTFT, ITL, TPOT, e2e) of any trace.
#include <iostream>

#include "cli/commands.hpp"
#include "cli/output_flags.hpp"
#include "format/trace.hpp"
#include "replay/replay.hpp"
#include "report/replay_report.hpp"
#include "report/request_rows.hpp"

namespace retrace::cli {
namespace {

struct StatsArgs {
  std::vector<std::string> traces;
  OutputFlags output;
  std::string slo;
};

void warn_damaged(const std::string& path, const Recovery& recovery) {
  if (!recovery.clean())
    std::cerr << "retrace: warning: " << path << ": " << describe(recovery)
              << "; figures cover the readable exchanges\n";
}

int run(const StatsArgs& args) {
  if (args.output.csv) {
    report::RequestRowOptions options;
    for (const auto& path : args.traces) {
      warn_damaged(path, report::write_request_rows(path, std::cout, options));
      options.header_row = false;  // one header for every trace's rows
    }
    return kExitOk;
  }
  replay::Slo slo;
  if (!args.slo.empty()) slo = replay::parse_slo(args.slo);
  auto context = stats_context(args.output);
  std::vector<std::string> json_reports;
  for (std::size_t i = 0; i < args.traces.size(); ++i) {
    const auto& path = args.traces[i];
    Recovery recovery;
    auto stats = replay::stats_of_trace(path, slo, &recovery);
    warn_damaged(path, recovery);
    context.title = path;
    context.header = report::header_of_trace(path);
    if (args.output.json) {
      json_reports.push_back(report::render_stats_json(stats, context));
    } else {
      if (i) std::cout << "\n";
      std::cout << (args.output.markdown ? report::render_stats_markdown(stats, context)
                                         : report::render_stats_text(stats, context));
    }
  }
  if (args.output.json) std::cout << report::join_json_reports(json_reports);
  return kExitOk;
}

}  // namespace

void add_stats(CLI::App& root, Registry& registry) {
  auto args = std::make_shared<StatsArgs>();
  auto* command = root.add_subcommand(
      "stats", "Latency and throughput figures of any trace (recorded, replayed or imported).");
  command->footer(
      "Examples:\n  retrace stats run.rtrace --slo ttft:200ms,tpot:50ms --json\n"
      "  retrace stats run.rtrace --percentiles 50,95,99.9 --markdown\n"
      "  retrace stats run.rtrace --csv > requests.csv");
  command->add_option("traces", args->traces, "Trace files (or segment directories)")->required()->check(CLI::ExistingPath);
  add_output_flags(*command, args->output,
                   "Print one CSV row per request (ttft_ms, e2e_ms, tokens, ...), every trace's "
                   "rows under one header");
  command->add_option("--slo", args->slo, "Goodput objective, e.g. ttft:200ms,tpot:50ms,e2e:2s; ttft:16tpot: the first token within 16 of the "
                      "request's own TPOT (a wait measured in the server's pace, whatever the machine's speed)");
  registry.add(command, [args] { return run(*args); });
}

}  // namespace retrace::cli
