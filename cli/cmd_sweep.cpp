// `retrace sweep`: the concurrency × repeat experiment in one command, resumable.
#include <filesystem>
#include <iostream>

#include "cli/commands.hpp"
#include "cli/outputs.hpp"
#include "cli/output_flags.hpp"
#include "cli/replay_flags.hpp"
#include "base/private_file.hpp"
#include "base/stop_signals.hpp"
#include "report/terminal_table.hpp"
#include "sweep/sweep.hpp"

namespace retrace::cli {

namespace {

struct SweepArgs {
  std::string trace;
  std::string target;
  std::string levels = "1,16,32";  // --concurrency
  std::string rates;               // --rate
  std::string speeds;              // --speed
  replay::ScheduleFlags schedule;  // --arrival, --burstiness (rate axis; shared with replay)
  int repeats = 3;
  std::string out;
  std::string order = "grouped";
  std::string resume;
  std::string answers_from;
  std::string match = "exact";
  double near_tie = diff::kDefaultNearTieMargin;
  bool json = false;
  bool force = false;
  bool csv = false;
  bool markdown = false;
  sweep::ReplayArgs replay;
};

namespace fs = std::filesystem;

// On --resume only secret headers may be given again (plan.json keeps no secret values).
void merge_headers(sweep::Plan& plan, const std::vector<std::string>& given) {
  for (const auto& header : given) {
    std::string name = header.substr(0, header.find(':'));
    bool replaced = false;
    for (auto& stored : plan.replay.headers)
      if (stored.substr(0, stored.find(':')) == name) {
        stored = header;
        replaced = true;
      }
    if (!replaced) plan.replay.headers.push_back(header);
  }
}

// --resume DIR: the saved plan, refused when a flag would change it.
sweep::Plan resumed_plan(CLI::App& command, const SweepArgs& args, const fs::path& dir) {
  for (auto flag : {"TRACE", "--target", "--out", "--concurrency", "--rate", "--speed", "--arrival", "--burstiness",
                    "--repeat", "--order", "--answers-from", "--match", "--near-tie", "--set",
                    "--unset", "--token-ids", "--model", "--max-error-rate", "--api-key-env",
                    "--timeout", "--request-deadline", "--label", "--limit", "--warmup", "--filter",
                    "--force", "--no-stream", "--seed", "--window-from", "--window-to", "--max-idle-gap",
                    "--sample-sessions", "--requests", "--duration", "--max-response-bytes"})
    if (command.count(flag) > 0)
      throw std::invalid_argument(std::string("--resume continues a sweep with its saved settings; ") +
                                  flag + " cannot change them (start a new sweep with --out instead)");
  if (fs::exists(dir / "study.json"))
    throw std::invalid_argument(dir.string() + " holds a study (study.json): continue it with `retrace study --resume " +
                                dir.string() + "`");
  sweep::Plan plan = sweep::load_plan(dir);
  merge_headers(plan, args.replay.headers);
  return plan;
}

// The axis the flags name (one of --concurrency, --rate, --speed), its levels and arrival process.
void plan_axis(CLI::App& command, const SweepArgs& args, sweep::Plan& plan) {
  auto given = command.count("--concurrency") + command.count("--rate") + command.count("--speed");
  if (given > 1)
    throw std::invalid_argument("give one axis to sweep: --concurrency LEVELS (closed loop), "
                                "--rate LEVELS (open loop) or --speed LEVELS (recorded timing)");
  plan.axis = command.count("--rate")    ? sweep::Axis::rate
              : command.count("--speed") ? sweep::Axis::speed
                                         : sweep::Axis::concurrency;
  if ((args.schedule.arrival || args.schedule.burstiness) && plan.axis != sweep::Axis::rate)
    throw std::invalid_argument("--arrival and --burstiness shape the open loop of a --rate sweep; give --rate LEVELS");
  plan.arrival = args.schedule.arrival.value_or(args.schedule.burstiness ? "gamma" : "poisson");
  plan.burstiness = args.schedule.burstiness;
  plan.levels = sweep::parse_levels(plan.axis == sweep::Axis::rate    ? args.rates
                                    : plan.axis == sweep::Axis::speed ? args.speeds
                                                                      : args.levels,
                                    plan.axis);
}

// A new sweep: its plan from the flags, every setting checked, then DIR and plan.json made.
sweep::Plan new_plan(CLI::App& command, const SweepArgs& args, const fs::path& dir) {
  if (args.trace.empty() || args.target.empty() || args.out.empty())
    throw std::invalid_argument(
        "sweep needs TRACE, --target URL and --out DIR (or --resume DIR); e.g. retrace sweep "
        "gold.rtrace --target http://127.0.0.1:8000 --concurrency 1,16,32 --repeat 3 --out sweep1");
  if (!fs::exists(args.trace))
    throw std::invalid_argument("TRACE " + args.trace + " does not exist");
  if (fs::exists(dir / "plan.json") && !args.force)
    throw std::invalid_argument(dir.string() + " already holds a sweep (plan.json); continue it "
                                "with `retrace sweep --resume " + dir.string() +
                                "`, choose another --out, or add --force to start it over");
  check_output_dir(dir, args.force, "--out");
  auto order = sweep::order_from_string(args.order);
  if (!order) throw std::invalid_argument("--order: expected grouped or interleaved");
  sweep::Plan plan;
  plan.trace = fs::absolute(args.trace).string();
  plan.target = args.target;
  plan_axis(command, args, plan);
  plan.repeats = args.repeats;
  plan.order = *order;
  plan.replay = args.replay;
  if (!args.answers_from.empty()) plan.answers_from = fs::absolute(args.answers_from).string();
  plan.match = args.match;
  plan.near_tie = args.near_tie;
  plan.runs = sweep::plan_runs(plan.levels, plan.repeats, plan.order, plan.axis);
  std::vector<fs::path> inputs{args.trace};
  if (!args.answers_from.empty()) inputs.emplace_back(args.answers_from);
  for (const auto& run : plan.runs) check_output_file(dir / run.file, inputs, true, "--out");
  // Validate every setting before creating anything.
  for (double level : plan.levels)
    sweep::to_replay_options(plan.replay, plan.target, sweep::schedule_at(plan, level), {});
  sweep::diff_options(plan, false);
  create_private_directories(dir);
  sweep::save_plan(plan, dir);
  return plan;
}

int run_sweep_command(CLI::App& command, SweepArgs& args) {
  const fs::path dir = args.resume.empty() ? fs::path(args.out) : fs::path(args.resume);
  sweep::Plan plan = args.resume.empty() ? new_plan(command, args, dir) : resumed_plan(command, args, dir);

  std::atomic<bool> stop{false};
  std::optional<sweep::Summary> summary;
  {
    StopOnSignals signals(stop, "\nretrace: stopping: cutting the run in flight (Ctrl-C again to quit at once)\n");
    summary = sweep::run_sweep(plan, dir, sweep::SweepIo{&std::cerr, &stop});
  }
  if (!summary) {
    auto left = sweep::pending_runs(plan).size();
    std::cerr << "sweep: interrupted with " << left << " of " << plan.runs.size()
              << " runs left; continue with: retrace sweep --resume " << dir.string() << "\n";
    return kExitError;
  }
  if (args.json)
    std::cout << sweep::summary_to_json(*summary);
  else if (args.csv)
    std::cout << sweep::summary_to_csv(*summary);
  else if (auto width = terminal_width(); width > 0 && !args.markdown)
    std::cout << report::markdown_for_terminal(sweep::summary_to_markdown(*summary), width);
  else  // piped or asked for: the Markdown itself
    std::cout << sweep::summary_to_markdown(*summary);
  std::cout << std::flush;
  std::cerr << "sweep: wrote " << (dir / "summary.json").string() << ", "
            << (dir / "summary.md").string() << ", " << (dir / "summary.csv").string() << " and "
            << (dir / "report.html").string() << "\n";
  std::size_t requests = 0;
  for (const auto& run : summary->runs) requests += run.exchanges;
  if (auto verdict = replay::failure_verdict(summary->errors, requests, plan.replay.max_error_rate)) {
    std::cerr << "sweep: " << *verdict << "; results are incomplete\n";
    return kExitRunsFailed;
  }
  return summary->any_differs() ? kExitDiffer : kExitOk;
}

}  // namespace

void add_sweep(CLI::App& root, Registry& registry) {
  auto args = std::make_shared<SweepArgs>();
  CLI::App* command = root.add_subcommand(
      "sweep",
      "Replay a trace at several concurrency levels (or open-loop rates, or speeds of the recorded "
      "timing), several times each, and report per level: "
      "outputs matching the expected answers, outputs differing from the baseline (the first "
      "level's first repeat) with their first divergent tokens, unique completions across repeats, "
      "throughput with its spread, and TTFT/e2e percentiles. Each run is its own trace in --out; "
      "plan.json records progress so an interrupted sweep continues with --resume. Exit 0 when no "
      "output differs from the baseline, 1 when some do, 2 when nothing could run (bad input, "
      "nothing answers at the target), 3 when more requests failed than --max-error-rate allows.");
  command->footer(
      "Examples:\n"
      "  retrace sweep gold.rtrace --target http://127.0.0.1:8000 --concurrency 1,16,32 --repeat 3 --out sweep1\n"
      "  retrace sweep gold.rtrace --target http://127.0.0.1:8000 --rate 1,2,4,8 --requests 150 --out sweep2\n"
      "  retrace sweep prod.rtrace --target http://127.0.0.1:8000 --speed 0.5,1,2 --max-idle-gap 5s --out sweep3\n"
      "One axis per sweep: --concurrency (closed loop; runs c16-r1.rtrace ...), --rate (open loop, "
      "poisson unless --arrival; rate2-r1.rtrace ...) or --speed (the recorded timing; "
      "speed0.5-r1.rtrace ...). The summary's first column, summary.json's \"axis\" and "
      "summary.csv's first header name it. The summary states the client's own headroom per run and "
      "in one line (\"client: busiest run (c=16, repeat 2) used 40 % of one core ...\"), naming "
      "every level where the client may have been the bottleneck.\n"
      "With --requests N every run sends N requests cycling through the trace; each copy of a "
      "request is compared with the baseline's copy of the same request (k-th with k-th).");
  command->add_option("TRACE", args->trace, "The trace to replay");
  command->add_option("--target", args->target, "Base URL of the server, e.g. http://127.0.0.1:8000");
  command->add_option("--concurrency,-c,--max-concurrency", args->levels,
                      "Concurrency levels, comma-separated (the default axis)")
      ->capture_default_str();
  command->add_option("--rate", args->rates,
                      "Open-loop rates to sweep instead, requests per second, comma-separated")
      ->type_name("LEVELS");
  command->add_option("--speed", args->speeds,
                      "Speeds of the recorded timing to sweep instead, comma-separated (2 = twice as fast)")
      ->type_name("LEVELS");
  add_schedule_flags(*command, args->schedule, "--rate sweep arrivals");
  command->add_option("--repeat", args->repeats, "Runs per level")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  command->add_option("--out,-o", args->out, "Directory for the runs, plan.json and the summary");
  add_force_flag(*command, args->force,
                 "Write into an existing, non-empty --out, starting over a sweep it holds");
  command->add_option("--order", args->order,
                      "grouped (a level's repeats together) or interleaved (levels in turn, to "
                      "expose drift)")
      ->capture_default_str();
  command->add_option("--resume", args->resume, "Continue the interrupted sweep in DIR")
      ->type_name("DIR");
  command->add_option("--answers-from", args->answers_from,
                      "A trace whose expected answers apply (matched by request key), when TRACE "
                      "carries none (e.g. a recording of an imported gold set)");
  command->add_option("--match", args->match,
                      "How outputs match expected answers: exact, normalized, contains, regex:RE, "
                      "json:FIELD")
      ->capture_default_str();
  add_near_tie_option(*command, args->near_tie, "Logprob margin under which a divergence counts as a near-tie flip");
  auto* json = command->add_flag("--json", args->json, "Print summary.json instead of the Markdown table");
  auto* csv = command->add_flag("--csv", args->csv, "Print summary.csv (one row per level) instead")
                  ->excludes(json);
  command->add_flag("--markdown", args->markdown,
                    "Print summary.md's Markdown even on a terminal (which otherwise gets aligned "
                    "text; a pipe or file gets Markdown)")
      ->excludes(json)
      ->excludes(csv);
  add_request_flags(*command, args->replay);
  registry.add(command, [command, args] { return run_sweep_command(*command, *args); });
}

}  // namespace retrace::cli
