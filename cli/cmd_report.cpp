// `retrace report`: one self-contained HTML file for a run, a sweep directory, or a diff.
#include <filesystem>
#include <fstream>
#include <iostream>

#include "cli/commands.hpp"
#include "cli/output_flags.hpp"
#include "cli/outputs.hpp"
#include "base/private_file.hpp"
#include "format/segments.hpp"
#include "report/html.hpp"
#include "sweep/study.hpp"
#include "sweep/find.hpp"
#include "sweep/sweep.hpp"

namespace retrace::cli {

namespace {

namespace fs = std::filesystem;

struct ReportArgs {
  std::vector<std::string> inputs;
  std::string out = "report.html";
  std::string match = "exact";
  double near_tie = diff::kDefaultNearTieMargin;
  bool force = false;
};

int run_report_command(const ReportArgs& args) {
  std::vector<fs::path> inputs(args.inputs.begin(), args.inputs.end());
  const bool to_stdout = args.out == "-";
  if (!to_stdout) check_output_file(args.out, inputs, args.force, "--out");
  report::HtmlReport page;
  const fs::path first = args.inputs.front();
  if (args.inputs.size() == 1 && fs::is_directory(first) && fs::exists(first / "search_history.json")) {
    page = report::find_report(sweep::load_history(first));  // a capacity search (sweep --find)
  } else if (args.inputs.size() == 1 && fs::is_directory(first) && !is_segment_set(first)) {
    if (!fs::exists(first / "plan.json"))
      throw std::invalid_argument(first.string() + " is a directory but holds no plan.json; report takes a "
                                  "sweep or study directory (retrace sweep/study --out DIR), a run trace, or BASELINE CANDIDATE...");
    auto plan = sweep::load_plan(first);
    if (fs::exists(first / "study.json")) {
      auto settings = sweep::load_study(first);
      page = settings.targets.size() > 1
                 ? report::study_targets_report(sweep::summarize_study_targets(plan, settings, first))
                 : report::study_report(sweep::summarize_study(plan, settings, first));
    }
    else
      page = report::sweep_report(sweep::summarize_sweep(plan, first));
  } else if (args.inputs.size() == 1) {
    page = report::run_report(first);
  } else {
    diff::Options options;
    options.near_tie = args.near_tie;
    auto matcher = diff::parse_matcher(args.match);
    if (!matcher)
      throw std::invalid_argument("--match '" + args.match + "': expected exact, normalized, contains, regex:RE or json:FIELD");
    options.match = matcher->first;
    options.match_arg = matcher->second;
    std::vector<fs::path> candidates(args.inputs.begin() + 1, args.inputs.end());
    page = report::diff_report(first, candidates, options);
  }
  if (to_stdout) {  // checked as every stdout is (cli/outputs.hpp)
    std::cout << report::render_html(page);
    return kExitOk;
  }
  // The page holds prompts and outputs: written 0600, like traces, plans and summaries.
  write_private_file(args.out, report::render_html(page));
  std::cout << args.out << "\n";
  return kExitOk;
}

}  // namespace

void add_report(CLI::App& root, Registry& registry) {
  auto args = std::make_shared<ReportArgs>();
  CLI::App* command = root.add_subcommand(
      "report",
      "Write one self-contained HTML report (charts, styles and script inline; it loads nothing): for "
      "a run trace, its throughput, latency distributions and errors; for a sweep directory, every "
      "level with its spread across repeats; for a study directory (retrace study --out), every cell "
      "with its scope and the histogram of first divergent positions; for BASELINE CANDIDATE..., also the divergent outputs "
      "(the first 100, real changes first; the rest counted) with both token streams aligned, the first divergent token "
      "highlighted, its alternatives and the margin. Failed gold questions: the first 20 a run, the rest counted. Runs "
      "are read as streams: memory does not grow with their requests or tokens. Prints the path written.");
  command->add_option("inputs", args->inputs, "RUN.rtrace, SWEEP_DIR, or BASELINE.rtrace CANDIDATE.rtrace...")
      ->required()
      ->check(CLI::ExistingPath);
  command->add_option("--out,-o", args->out, "The HTML file to write; - writes it on stdout instead of printing the path")->capture_default_str();
  add_force_flag(*command, args->force, "Replace an existing --out (never an input)");
  command->add_option("--match", args->match,
                      "For a diff with expected answers: exact, normalized, contains, regex:RE, json:FIELD")
      ->capture_default_str();
  add_near_tie_option(*command, args->near_tie, "For a diff: near-tie margin in nats");
  command->footer(
      "Examples:\n  retrace report sweep1 -o sweep1.html\n  retrace report run.rtrace -o run.html\n"
      "  retrace report run-c1.rtrace run-c32.rtrace -o diff.html");
  registry.add(command, [args] { return run_report_command(*args); });
}

}  // namespace retrace::cli
