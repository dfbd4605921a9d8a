// retrace diff BASELINE CANDIDATE...: which outputs differ, and where each first differs.
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <regex>

#include "cli/commands.hpp"
#include "cli/output_flags.hpp"
#include "diff/diff.hpp"
#include "report/diff_report.hpp"
#include "shadow/shadow.hpp"

namespace retrace::cli {

namespace {

struct DiffArgs {
  std::string baseline;
  std::vector<std::string> candidates;
  bool json = false, markdown = false, csv = false;
  std::size_t context = 5, show = 10, max_divergent = 0;
  bool expect = false;
  std::string match = "exact";
  double near_tie = diff::kDefaultNearTieMargin;
  double embedding_tolerance = 0;
  std::string fail_on = "any";
};

int run_diff(const DiffArgs& args) {
  diff::Options options;
  options.context = args.context;
  options.near_tie = args.near_tie;
  options.embedding_tolerance = args.embedding_tolerance;
  options.expect = args.expect;
  auto matcher = diff::parse_matcher(args.match);
  if (!matcher) {
    std::cerr << "retrace diff: unknown --match '" << args.match
              << "'; use exact, normalized, contains, regex:RE or json:FIELD\n";
    return kExitError;
  }
  options.match = matcher->first;
  options.match_arg = matcher->second;
  if (options.match == diff::Match::regex) {
    try {
      std::regex check(options.match_arg);
    } catch (const std::regex_error& e) {
      std::cerr << "retrace diff: --match regex:" << options.match_arg << " is not a valid regular expression ("
                << e.what() << ")\n";
      return kExitError;
    }
  }

  report::DiffRenderOptions render;
  render.show = args.show;
  render.max_divergent = args.max_divergent;
  render.near_tie = args.near_tie;
  render.expect = args.expect;
  render.fail_on = args.fail_on == "real" ? diff::FailOn::real : args.fail_on == "none" ? diff::FailOn::none
                                                                                         : diff::FailOn::any;
  render.color = !args.json && !args.markdown && !args.csv && ::isatty(STDOUT_FILENO) && !std::getenv("NO_COLOR");

  std::vector<std::filesystem::path> candidates(args.candidates.begin(), args.candidates.end());
  std::filesystem::path baseline = args.baseline;
  // A shadow run's directory alone: baseline = its primary, runs = its control and candidate.
  auto legs = candidates.empty() ? shadow::shadow_legs(baseline) : std::nullopt;
  if (candidates.empty() && !legs) {
    std::cerr << "retrace diff: give a baseline and at least one candidate trace (or one directory "
                 "`retrace shadow --out` wrote)\n";
    return kExitError;
  }
  if (legs) {
    baseline = legs->primary;
    for (const auto& [name, path] : legs->runs) candidates.push_back(path);
  }
  diff::Result result = diff::compare_files(baseline, candidates, options);
  if (legs) {
    result.baseline_name = "primary";
    for (std::size_t i = 0; i < result.runs.size() && i < legs->runs.size(); ++i)
      result.runs[i].name = legs->runs[i].first;
  }
  for (const auto& warning : result.warnings) std::cerr << "retrace diff: warning: " << warning << "\n";

  if (args.json) report::render_diff_json(result, render, std::cout);
  else if (args.markdown) report::render_diff_markdown(result, render, std::cout);
  else if (args.csv) report::render_diff_csv(result, std::cout);
  else report::render_diff_terminal(result, render, std::cout);
  std::cout.flush();  // a closed pipe (EPIPE) is not an error: the verdict still stands
  return report::diff_exit_code(result, render);
}

}  // namespace

void add_diff(CLI::App& root, Registry& registry) {
  auto args = std::make_shared<DiffArgs>();
  CLI::App* command = root.add_subcommand(
      "diff",
      "Compare candidate runs with a baseline: which outputs differ, and the first divergent token of "
      "each (index on both sides, context, logprob margin, near-tie or real change), part by part "
      "(reasoning, answer, each tool call, embeddings). Exit 0 when no output differs (under "
      "--fail-on), 1 when some do or some could not be compared, 2 on error.");
  command->add_option("baseline", args->baseline, "Baseline trace (.rtrace, or a segment directory)")->required()->check(CLI::ExistingPath);
  command->add_option("candidates", args->candidates,
                      "Candidate traces (.rtrace, or segment directories); none when the baseline is a "
                      "`retrace shadow` run's directory (its primary against its control and candidate)")
      ->check(CLI::ExistingPath);
  auto* json = command->add_flag("--json", args->json, "Everything as one JSON document");
  auto* markdown = command->add_flag("--markdown", args->markdown, "A Markdown summary for pull requests")
                       ->excludes(json);
  command->add_flag("--csv", args->csv, "The summary as CSV: one row per candidate run")
      ->excludes(json)
      ->excludes(markdown);
  command->add_option("--context", args->context, "Tokens of context either side of a divergence")
      ->capture_default_str();
  command->add_option("--show", args->show, "Divergences listed in full (terminal, Markdown)")->capture_default_str();
  command->add_flag("--expect", args->expect, "Match outputs against the expected answers the traces carry");
  command->add_option("--match", args->match, "Matcher for --expect: exact, normalized, contains, regex:RE, json:FIELD")
      ->capture_default_str();
  add_near_tie_option(*command, args->near_tie,
                      "Logprob margin (nats) under which a divergence is a near-tie (numeric noise)");
  command->add_option("--embedding-tolerance", args->embedding_tolerance,
                      "Largest absolute difference between two embedding vectors still counted identical "
                      "(default 0: any difference shows)")
      ->check(CLI::NonNegativeNumber);
  command->add_option("--fail-on", args->fail_on,
                      "What makes the exit code 1: any difference, real (not near-ties), none")
      ->capture_default_str()
      ->check(CLI::IsMember({"any", "real", "none"}));
  command->add_option("--max-divergent", args->max_divergent,
                      "Differences tolerated (under --fail-on) before exiting 1")
      ->capture_default_str();
  command->footer(
      "Example:\n  retrace diff run-c1.rtrace run-c32.rtrace --fail-on real\n"
      "  retrace diff gold.rtrace run.rtrace --expect --match normalized --json");
  registry.add(command, [args] { return run_diff(*args); });
}

}  // namespace retrace::cli
