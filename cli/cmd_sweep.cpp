// `retrace sweep`: the concurrency × repeat experiment in one command, resumable.
#include <cmath>
#include <filesystem>
#include <iostream>

#include "cli/commands.hpp"
#include "cli/outputs.hpp"
#include "cli/output_flags.hpp"
#include "cli/replay_flags.hpp"
#include "base/private_file.hpp"
#include "base/stop_signals.hpp"
#include "report/terminal_table.hpp"
#include "sweep/find.hpp"
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
  // --find: the capacity search (sweep/find.hpp)
  std::string find;
  std::string slo;
  double attainment = 0.95;
  std::optional<double> stable;
  std::string precision = "5%";
  std::size_t max_probes = 16;
  double find_from = 1;
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
                    "--sample-sessions", "--requests", "--duration", "--max-response-bytes", "--find",
                    "--slo", "--attainment", "--stable", "--precision", "--find-from"})
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

// "5%" or 0.05: --precision, a fraction above 0 and below 1.
double parse_precision(const std::string& text) {
  std::string number = text;
  bool percent = !number.empty() && number.back() == '%';
  if (percent) number.pop_back();
  double value = 0;
  try {
    std::size_t used = 0;
    value = std::stod(number, &used);
    if (used != number.size()) value = -1;
  } catch (const std::exception&) {
    value = -1;
  }
  if (percent) value /= 100;
  if (!(value > 0 && value < 1))
    throw std::invalid_argument("--precision '" + text + "': expected a fraction such as 5% or 0.05 (above 0, below 1)");
  return value;
}

// A new search: the sweep plan without runs (run_find adds each as it chooses it), and its settings.
sweep::FindSummary new_search(CLI::App& command, const SweepArgs& args, sweep::Plan& plan) {
  auto axis = sweep::axis_from_string(args.find);
  if (!axis) throw std::invalid_argument("--find '" + args.find + "': expected concurrency, rate or speed");
  if (command.count("--concurrency") + command.count("--rate") + command.count("--speed") > 0)
    throw std::invalid_argument("--find chooses its own loads: give --find-from START, not --concurrency, --rate or --speed");
  if (command.count("--repeat") + command.count("--order") > 0)
    throw std::invalid_argument("--find runs each load once (again only to settle an undecided boundary): "
                                "--repeat and --order belong to a sweep over fixed levels");
  if (args.slo.empty() && !args.stable)
    throw std::invalid_argument("--find needs --slo LIMITS (e.g. --slo ttft:500ms,e2e:10s), --stable RATE, or both");
  if (!args.slo.empty()) replay::parse_slo(args.slo);  // checked now, kept as given
  if (!(args.attainment > 0 && args.attainment <= 1))
    throw std::invalid_argument("--attainment: expected a fraction above 0, at most 1 (e.g. 0.95)");
  if (args.stable && !(*args.stable >= 0 && *args.stable < 1))
    throw std::invalid_argument("--stable: expected a rate of differing outputs from 0 up to (not including) 1");
  if (*axis == sweep::Axis::concurrency && (args.find_from < 1 || args.find_from != std::floor(args.find_from)))
    throw std::invalid_argument("--find-from: a concurrency search starts at a positive integer");
  if (!(args.find_from > 0)) throw std::invalid_argument("--find-from: expected a load above 0");
  if (args.max_probes < 2) throw std::invalid_argument("--max-probes: at least 2");
  plan.axis = *axis;
  plan.levels = {args.find_from};
  plan.repeats = 1;
  sweep::FindSummary summary;
  summary.trace = plan.trace;
  summary.target = plan.target;
  summary.axis = args.find;
  summary.slo = args.slo;
  summary.attainment = args.attainment;
  summary.stable = args.stable;
  summary.precision = parse_precision(args.precision);
  summary.max_probes = args.max_probes;
  summary.start = args.find_from;
  summary.max_error_rate = plan.replay.max_error_rate;
  return summary;
}

int run_find_command(SweepArgs& args, sweep::Plan& plan, sweep::FindSummary& summary, const fs::path& dir) {
  std::atomic<bool> stop{false};
  bool finished = false;
  {
    StopOnSignals signals(stop, "\nretrace: stopping: cutting the run in flight (Ctrl-C again to quit at once)\n");
    finished = sweep::run_find(plan, summary, dir, sweep::FindIo{&std::cerr, &stop});
  }
  if (!finished) {
    std::cerr << "sweep: search interrupted after " << summary.runs << " runs; continue with: retrace sweep --resume "
              << dir.string() << "\n";
    return kExitError;
  }
  if (args.json)
    std::cout << report::find_to_json(summary);
  else if (args.csv)
    std::cout << report::find_to_csv(summary);
  else if (auto width = terminal_width(); width > 0 && !args.markdown)
    std::cout << report::markdown_for_terminal(report::find_to_markdown(summary), width);
  else
    std::cout << report::find_to_markdown(summary);
  std::cout << std::flush;
  std::cerr << "sweep: wrote " << (dir / "summary.json").string() << ", " << (dir / "summary.md").string() << ", "
            << (dir / "summary.csv").string() << ", " << (dir / "report.html").string() << " and "
            << (dir / "search_history.json").string() << "\n";
  return report::find_exit_status(summary.answer);
}

int run_sweep_command(CLI::App& command, SweepArgs& args) {
  if (!args.resume.empty() && fs::exists(fs::path(args.resume) / "search_history.json")) {
    const fs::path dir(args.resume);
    sweep::Plan plan = resumed_plan(command, args, dir);
    sweep::FindSummary summary = sweep::load_history(dir);
    if (command.count("--max-probes") > 0) summary.max_probes = args.max_probes;  // a larger budget
    return run_find_command(args, plan, summary, dir);
  }
  if (!args.find.empty()) {
    if (!args.resume.empty())
      throw std::invalid_argument(args.resume + " holds no search (search_history.json): --find starts one with --out");
    const fs::path dir(args.out);
    if (args.trace.empty() || args.target.empty() || args.out.empty())
      throw std::invalid_argument("sweep --find needs TRACE, --target URL and --out DIR (or --resume DIR); e.g. retrace "
                                  "sweep prod.rtrace --target http://127.0.0.1:8000 --find concurrency --slo e2e:10s --out cap1");
    if (!fs::exists(args.trace)) throw std::invalid_argument("TRACE " + args.trace + " does not exist");
    if ((fs::exists(dir / "plan.json") || fs::exists(dir / "search_history.json")) && !args.force)
      throw std::invalid_argument(dir.string() + " already holds a sweep or a search; continue it with `retrace sweep --resume " +
                                  dir.string() + "`, choose another --out, or add --force to start it over");
    check_output_dir(dir, args.force, "--out");
    sweep::Plan plan;
    plan.trace = fs::absolute(args.trace).string();
    plan.target = args.target;
    plan.replay = args.replay;
    if (!args.answers_from.empty()) plan.answers_from = fs::absolute(args.answers_from).string();
    plan.match = args.match;
    plan.near_tie = args.near_tie;
    sweep::FindSummary summary = new_search(command, args, plan);
    sweep::to_replay_options(plan.replay, plan.target, sweep::schedule_at(plan, summary.start), {});
    sweep::diff_options(plan, false);
    create_private_directories(dir);
    sweep::save_history(summary, dir);
    return run_find_command(args, plan, summary, dir);
  }
  for (auto flag : {"--slo", "--attainment", "--stable", "--precision", "--max-probes", "--find-from"})
    if (command.count(flag) > 0)
      throw std::invalid_argument(std::string(flag) + " belongs to a capacity search: add --find concurrency|rate|speed");
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
      "  retrace sweep gold.rtrace --target http://127.0.0.1:8000 --find concurrency --slo e2e:10s --requests 200 --out cap1\n"
      "Capacity search (--find concurrency|rate|speed): the largest load at which --attainment of the requests meet "
      "every --slo limit. It doubles from --find-from, then bisects (integers for concurrency, to --precision for rate "
      "and speed), judging each probe on its attainment with a Clopper-Pearson interval and the error rate, over a "
      "monotone (isotonic) fit of all probes; a probe at the final boundary whose interval straddles the target is run again once. An open-loop (rate "
      "or speed) probe whose backlog keeps growing is cut and fails. With --stable RATE it also finds the largest load whose "
      "answers stay the same as the baseline's. It writes summary.json (feasible_max, infeasible_min, "
      "binding_constraint, stable_max, probes), summary.md, summary.csv, report.html and search_history.json (after every "
      "run; --resume continues). Exit 0 found, 1 no probed load meets the SLOs, 2 error, 3 not resolved within "
      "--max-probes.\n"
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
  command->add_option("--find", args->find,
                      "Search instead of sweeping: the largest concurrency, rate or speed whose runs meet --slo "
                      "(and, with --stable, keep the answers). Doubles from --find-from, then bisects")
      ->type_name("AXIS");
  command->add_option("--slo", args->slo,
                      "With --find: the limits each request must meet, e.g. ttft:500ms,tpot:50ms,e2e:10s; "
                      "ttft:16tpot: the first token within 16 of the request's own TPOT (a wait for a slot, "
                      "whatever the machine's speed)")
      ->type_name("LIMITS");
  command->add_option("--attainment", args->attainment,
                      "With --find: the fraction of a probe's requests that must meet every --slo limit")
      ->capture_default_str();
  command->add_option("--stable", args->stable,
                      "With --find: a load also fails when the lower bound of its rate of outputs differing from the "
                      "baseline (the first, lowest load) exceeds RATE above the control's (the baseline run again)")
      ->type_name("RATE");
  command->add_option("--precision", args->precision,
                      "With --find over rate or speed: stop when the bracket is this narrow, relative to its lower end")
      ->capture_default_str();
  command->add_option("--max-probes", args->max_probes,
                      "With --find: the most runs the search makes (the control and extended probes included); exit "
                      "3 when the boundary is not resolved within them (raise it with --resume)")
      ->capture_default_str();
  command->add_option("--find-from", args->find_from, "With --find: the first load probed, also the baseline")
      ->capture_default_str();
  add_request_flags(*command, args->replay);
  registry.add(command, [command, args] { return run_sweep_command(*command, *args); });
}

}  // namespace retrace::cli
