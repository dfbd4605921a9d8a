// `retrace study`: the repeatability experiment (concurrency × cache state × repeats, with a
// control), scoped from its own data, resumable.
#include <filesystem>
#include <iostream>

#include "cli/commands.hpp"
#include "cli/outputs.hpp"
#include "cli/output_flags.hpp"
#include "cli/replay_flags.hpp"
#include "base/private_file.hpp"
#include "base/stop_signals.hpp"
#include "report/terminal_table.hpp"
#include "sweep/study.hpp"

namespace retrace::cli {

namespace {

struct StudyArgs {
  std::string trace;
  std::vector<std::string> targets;
  std::string levels = "1,16,32";
  std::string cache = "cold,warm";
  int repeats = 3;
  std::optional<std::size_t> same_prompt;
  bool greedy = false;
  bool allow_sampling = false;
  std::string out;
  std::string resume;
  double near_tie = diff::kDefaultNearTieMargin;
  bool json = false, csv = false, markdown = false, force = false;
  sweep::ReplayArgs replay;
};

namespace fs = std::filesystem;

// What the study prints, in the form asked for: the summary's JSON, CSV or Markdown.
struct Printed {
  std::string json, csv, markdown;
  std::string exchanges_csv = "exchanges.csv";  // where each exchange's row is, under the study's directory
  std::size_t errors = 0, requests = 0;
  bool differs = false;
};

Printed printed(const report::StudySummary& summary) {
  Printed out{report::study_to_json(summary), report::study_to_csv(summary), report::study_to_markdown(summary)};
  out.errors = summary.errors;
  out.differs = summary.any_differs();
  for (const auto& run : summary.runs) out.requests += run.exchanges;
  return out;
}

Printed printed(const report::StudyTargets& study) {
  Printed out{report::study_targets_to_json(study), report::study_targets_to_csv(study),
              report::study_targets_to_markdown(study)};
  out.errors = study.errors();
  out.differs = study.any_differs();
  for (const auto& target : study.targets)
    for (const auto& run : target.runs) out.requests += run.exchanges;
  out.exchanges_csv = "target-*/exchanges.csv";
  return out;
}

int print_study(const Printed& summary, const StudyArgs& args, const sweep::Plan& plan, const fs::path& dir) {
  if (args.json)
    std::cout << summary.json;
  else if (args.csv)
    std::cout << summary.csv;
  else if (auto width = terminal_width(); width > 0 && !args.markdown)
    std::cout << report::markdown_for_terminal(summary.markdown, width);
  else
    std::cout << summary.markdown;
  std::cout << std::flush;
  std::cerr << "study: wrote " << (dir / "summary.json").string() << ", " << (dir / "summary.md").string()
            << ", " << (dir / "summary.csv").string() << " and " << (dir / summary.exchanges_csv).string() << "\n";
  if (auto verdict = replay::failure_verdict(summary.errors, summary.requests, plan.replay.max_error_rate)) {
    std::cerr << "study: " << *verdict << "; results are incomplete\n";
    return kExitRunsFailed;
  }
  return summary.differs ? kExitDiffer : kExitOk;
}

// --resume DIR: the saved plan and study, refused when a flag would change them.
void resume_study(CLI::App& command, const fs::path& dir, sweep::Plan& plan, sweep::StudySettings& settings) {
  for (auto flag : {"TRACE", "--target", "--out", "--concurrency", "--cache", "--repeat", "--same-prompt",
                    "--greedy", "--allow-sampling", "--near-tie", "--set", "--unset", "--token-ids",
                    "--model", "--max-error-rate", "--timeout", "--label", "--limit", "--filter",
                    "--no-stream", "--requests", "--max-response-bytes", "--force"})
    if (command.count(flag) > 0)
      throw std::invalid_argument(std::string("--resume continues a study with its saved settings; ") + flag +
                                  " cannot change them (start a new study with --out instead)");
  if (fs::exists(dir / "plan.json") && !fs::exists(dir / "study.json"))
    throw std::invalid_argument(dir.string() + " holds a sweep, not a study: continue it with `retrace sweep --resume " +
                                dir.string() + "`");
  plan = sweep::load_plan(dir);
  settings = sweep::load_study(dir);
  if (settings.run_cache.size() != plan.runs.size())
    throw std::runtime_error((dir / "study.json").string() + " does not match plan.json's runs");
  if (settings.targets.size() > 1) sweep::prepare_targets(plan, settings, dir, false);
}

// The flags a new study refuses, before anything is made.
void check_new_study(CLI::App& command, const StudyArgs& args, const fs::path& dir) {
  if (args.trace.empty() || args.targets.empty() || args.out.empty())
    throw std::invalid_argument(
        "study needs TRACE, --target URL and --out DIR (or --resume DIR); e.g. retrace study "
        "gold.rtrace --target http://127.0.0.1:8000 --concurrency 1,16,32 --cache cold,warm --out study1");
  if (!fs::exists(args.trace)) throw std::invalid_argument("TRACE " + args.trace + " does not exist");
  for (auto flag : {"--warmup", "--duration", "--window-from", "--window-to", "--max-idle-gap",
                    "--sample-sessions"})
    if (command.count(flag) > 0)
      throw std::invalid_argument(std::string(flag) +
                                  " does not fit a study: every run sends the same requests, and "
                                  "--cache warm makes its own first pass");
  if (args.same_prompt && args.replay.requests)
    throw std::invalid_argument("give --same-prompt N (one prompt N times) or --requests N, not both");
  if (fs::exists(dir / "plan.json") && !args.force)
    throw std::invalid_argument(dir.string() + " already holds a study or sweep (plan.json); continue it "
                                "with `retrace study --resume " + dir.string() +
                                "`, choose another --out, or add --force to start it over");
  check_output_dir(dir, args.force, "--out");
}

// A new study: its plan and settings from the flags, every setting checked, then DIR, plan.json
// and study.json made.
void new_study(CLI::App& command, const StudyArgs& args, const fs::path& dir, sweep::Plan& plan,
               sweep::StudySettings& settings) {
  check_new_study(command, args, dir);
  plan.trace = fs::absolute(args.trace).string();
  settings.targets = sweep::parse_targets(args.targets);
  plan.target = settings.targets.front();
  plan.levels = sweep::parse_levels(args.levels);
  plan.repeats = args.repeats;
  plan.replay = args.replay;
  plan.near_tie = args.near_tie;
  settings.cache = sweep::parse_cache_states(args.cache);
  settings.same_prompt = args.same_prompt;
  settings.greedy = args.greedy;
  settings.allow_sampling = args.allow_sampling;
  if (args.greedy) plan.replay.set.push_back("temperature=0");
  sweep::plan_study(plan, settings);
  for (const auto& run : plan.runs) check_output_file(dir / run.file, {args.trace}, true, "--out");
  for (double level : plan.levels)
    sweep::to_replay_options(plan.replay, plan.target, static_cast<int>(level), {});
  sweep::diff_options(plan, false);
  create_private_directories(dir);  // 0700 whatever the umask, as sweep's
  sweep::save_plan(plan, dir);
  sweep::save_study(settings, dir);
  if (settings.targets.size() > 1) sweep::prepare_targets(plan, settings, dir, true);
}

int run_study_command(CLI::App& command, StudyArgs& args) {
  sweep::Plan plan;
  sweep::StudySettings settings;
  const fs::path dir = args.resume.empty() ? fs::path(args.out) : fs::path(args.resume);
  if (!args.resume.empty()) resume_study(command, dir, plan, settings);
  else new_study(command, args, dir, plan, settings);

  std::atomic<bool> stop{false};
  std::optional<Printed> summary;
  {
    StopOnSignals signals(stop, "\nretrace: stopping: cutting the run in flight (Ctrl-C again to quit at once)\n");
    sweep::SweepIo io{&std::cerr, &stop};
    if (settings.targets.size() > 1) {
      if (auto study = sweep::run_study_targets(settings, dir, io)) summary = printed(*study);
    } else if (auto one = sweep::run_study(plan, settings, dir, io)) {
      summary = printed(*one);
    }
  }
  if (!summary) {
    auto [left, total] = sweep::study_runs_left(plan, settings, dir);
    std::cerr << "study: interrupted with " << left << " of " << total
              << " runs left; continue with: retrace study --resume " << dir.string() << "\n";
    return kExitError;
  }
  return print_study(*summary, args, plan, dir);
}

}  // namespace

void add_study(CLI::App& root, Registry& registry) {
  auto args = std::make_shared<StudyArgs>();
  CLI::App* command = root.add_subcommand(
      "study",
      "The repeatability experiment in one command: a baseline run, then every cell of concurrency × "
      "cache state (cold, warm) run --repeat times, each output compared with the baseline's. The "
      "cell with the baseline's own configuration is the control: its difference rate is the noise "
      "floor. Per cell: outputs differing with the 95 % upper bound on the rate, near-ties vs real "
      "changes, unique completions per prompt, where outputs first diverge, throughput with its 95 % "
      "interval, the cache hits the server reported, and which output part (reasoning, content, "
      "refusal, tool call, embedding) diverged first. With --target given several times (e.g. one model with and without a "
      "batch-invariant mode), the whole matrix runs against each target with the same requests, and the "
      "summary adds the price of repeatability: each target's throughput beside its difference rate, "
      "and how many of its baseline outputs differ from the first target's. Every summary opens with "
      "its scope, written from the data. Requests that are not at temperature 0 are refused unless "
      "--greedy or --allow-sampling. Exit 0 when no output differs, 1 when some do (with several "
      "targets, also a baseline output that differs across targets), 2 when nothing could run (bad "
      "input, not greedy, nothing answers), 3 when more requests failed than --max-error-rate allows.");
  command->footer(
      "Examples:\n"
      "  retrace study gold.rtrace --target http://127.0.0.1:8000 --concurrency 1,16,32 --cache cold,warm --repeat 3 --out study1\n"
      "  retrace study gold.rtrace --target http://127.0.0.1:8000 --same-prompt 1000 --concurrency 32 --out one-prompt\n"
      "  retrace study gold.rtrace --target http://127.0.0.1:8000 --target http://127.0.0.1:8001 -c 1,32 --cache cold --out price\n"
      "  retrace study --resume study1\n"
      "Cold, by the server the preflight identified: vLLM and retrace serve get a fresh cache_salt on "
      "every request, SGLang a POST /flush_cache before the run, llama.cpp cache_prompt false; "
      "others are sent as is, and the summary says so. Warm: every request is sent once first and "
      "the second pass is measured; a warm cell whose responses report no cached tokens says so. "
      "--out holds plan.json and study.json (progress, for --resume), one trace per run "
      "(baseline.rtrace, c16-warm-r2.rtrace ...), exchanges.csv (each exchange's sampling as sent "
      "and cached tokens) and summary.json, summary.md, summary.csv, report.html; each states the "
      "client's own headroom per cell and in one line, naming every cell where it may have been the "
      "bottleneck. With several --target, "
      "target-1/, target-2/ ... each hold one target's plan, runs and summaries (as one target's --out "
      "would), and the study's own summaries beside them compare the targets; --resume continues every target.");
  command->add_option("TRACE", args->trace, "The trace whose requests to study");
  command->add_option("--target", args->targets,
                      "Base URL of the server, e.g. http://127.0.0.1:8000; give it again for each further "
                      "target to compare (the price of repeatability)")
      ->allow_extra_args(false)
      ->type_name("URL");
  command->add_option("--concurrency,-c", args->levels, "Concurrency levels, comma-separated; the first is the baseline's")
      ->capture_default_str();
  command->add_option("--cache", args->cache, "Cache states, comma-separated (cold, warm); the first is the baseline's")
      ->capture_default_str();
  command->add_option("--repeat", args->repeats, "Runs per cell")->check(CLI::PositiveNumber)->capture_default_str();
  command->add_option("--same-prompt", args->same_prompt,
                      "Send the trace's first request N times per run instead (unique completions of one prompt)")
      ->check(CLI::PositiveNumber)
      ->type_name("N");
  command->add_flag("--greedy", args->greedy, "Send temperature 0 on every request");
  command->add_flag("--allow-sampling", args->allow_sampling,
                    "Study requests that are not at temperature 0 as sent (every summary then says so)");
  command->add_option("--out,-o", args->out, "Directory for the runs, plan.json, study.json and the summaries");
  add_force_flag(*command, args->force, "Write into an existing, non-empty --out, starting over what it holds");
  command->add_option("--resume", args->resume, "Continue the interrupted study in DIR")->type_name("DIR");
  add_near_tie_option(*command, args->near_tie, "Logprob margin under which a divergence counts as a near-tie flip");
  auto* json = command->add_flag("--json", args->json, "Print summary.json instead of the Markdown");
  auto* csv = command->add_flag("--csv", args->csv,
                                "Print summary.csv (one row per cell; per target and cell with several --target) instead")
                  ->excludes(json);
  command->add_flag("--markdown", args->markdown, "Print summary.md's Markdown even on a terminal")
      ->excludes(json)
      ->excludes(csv);
  add_request_flags(*command, args->replay);
  registry.add(command, [command, args] { return run_study_command(*command, *args); });
}

}  // namespace retrace::cli
