// `retrace bisect`: the first point along an ordered axis (concurrency, recorded runs, or values a
// command deploys) whose outputs differ from the baseline, in as few probes as a binary search needs.
#include <cctype>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <iostream>

#include "cli/commands.hpp"
#include "cli/output_flags.hpp"
#include "cli/outputs.hpp"
#include "cli/replay_flags.hpp"
#include "base/private_file.hpp"
#include "base/stop_signals.hpp"
#include "replay/preflight.hpp"
#include "sweep/sweep.hpp"

namespace retrace::cli {

namespace {

namespace fs = std::filesystem;

struct BisectArgs {
  std::string over;
  std::vector<std::string> items;  // runs: BASE RUN1...; values: v1,v2,...
  std::string range;
  std::string trace;
  std::string target;
  std::string run;
  int concurrency = 1;
  std::string out;
  double near_tie = diff::kDefaultNearTieMargin;
  bool force = false;
  bool json = false;
  sweep::ReplayArgs replay;
};

fs::path make_out_dir(const std::string& given, bool force) {
  if (!given.empty()) {
    check_output_dir(given, force, "--out");
    create_private_directories(given);
    return given;
  }
  std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char name[64];
  std::strftime(name, sizeof name, "retrace-bisect-%Y%m%d-%H%M%S", &local);
  fs::path dir = fs::current_path() / name;
  for (int suffix = 2; fs::exists(dir); ++suffix)
    dir = fs::current_path() / (std::string(name) + "-" + std::to_string(suffix));
  create_private_directories(dir);
  return dir;
}

// A value as a file name: anything but [A-Za-z0-9._-] becomes '_'.
std::string file_safe(std::string_view value) {
  std::string out;
  for (char c : value)
    out += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-') ? c : '_';
  return out.substr(0, 60);
}

// The run of --over values' index-th value.
std::string probe_file(std::size_t index, const std::string& value) {
  return "v" + std::to_string(index) + "-" + file_safe(value) + ".rtrace";
}

std::string substitute(std::string command, const std::string& value) {
  for (std::size_t at = command.find("{}"); at != std::string::npos;
       at = command.find("{}", at + value.size()))
    command.replace(at, 2, value);
  return command;
}

// What the probes of an axis use, kept while the bisection runs (axis.run_for refers to it).
struct Probes {
  std::optional<LoadedTrace> trace;
  std::shared_ptr<const replay::Preflight> checked;  // --over values: each deployment its own
  fs::path dir;
  std::vector<int> levels;
  std::vector<std::string> values;
};

void need_replay(const BisectArgs& args, const char* mode) {
  if (args.trace.empty() || args.target.empty())
    throw std::invalid_argument(std::string("--over ") + mode + " needs --trace T and --target URL");
  sweep::to_replay_options(args.replay, args.target, 1, {});  // validate before any traffic
}

// --over concurrency: --trace replayed at each probed level of --range.
void concurrency_axis(BisectArgs& args, Probes& probes, sweep::BisectAxis& axis, std::atomic<bool>& stop) {
  if (args.range.empty()) throw std::invalid_argument("--over concurrency needs --range FROM..TO");
  need_replay(args, "concurrency");
  probes.levels = sweep::parse_range(args.range);
  probes.trace = replay::load_input(args.trace, sweep::to_replay_options(args.replay, args.target, 1, {}),
                                    std::cerr, "bisect");
  // Once for every probe, before any traffic: the target stays the same along this axis.
  probes.checked = std::make_shared<const replay::Preflight>(
      replay::preflight(*probes.trace, sweep::to_replay_options(args.replay, args.target, 1, {})));
  for (const auto& note : probes.checked->notes) std::cerr << "bisect: " << note << "\n";
  probes.dir = make_out_dir(args.out, args.force);
  for (int level : probes.levels)
    check_output_file(probes.dir / ("c" + std::to_string(level) + ".rtrace"), {args.trace}, true, "--out");
  axis.name = "concurrency";
  for (int level : probes.levels) axis.point_labels.push_back("concurrency " + std::to_string(level));
  axis.run_for = [&](std::size_t index) {
    int level = probes.levels[index];
    return sweep::replay_at(*probes.trace, args.trace, args.replay, args.target, level,
                            {{"run", "bisect-c" + std::to_string(level)}, {"concurrency", std::to_string(level)}},
                            probes.dir / ("c" + std::to_string(level) + ".rtrace"), &stop, probes.checked);
  };
}

// --over runs: recorded runs BASE RUN1 RUN2... in order.
void runs_axis(const BisectArgs& args, sweep::BisectAxis& axis) {
  if (args.items.size() < 2)
    throw std::invalid_argument("--over runs needs BASE and at least one more run, in order");
  for (const auto& path : args.items)
    if (!fs::exists(path)) throw std::invalid_argument("run " + path + " does not exist");
  axis.name = "runs";
  for (const auto& path : args.items) axis.point_labels.push_back(path);
  axis.run_for = [&](std::size_t index) { return fs::path(args.items[index]); };
}

// The --over values given, each argument split at its commas; empty values skipped.
std::vector<std::string> split_values(const std::vector<std::string>& items) {
  std::vector<std::string> values;
  for (const auto& item : items) {
    std::string_view rest = item;
    while (!rest.empty()) {
      auto comma = rest.find(',');
      auto value = rest.substr(0, comma);
      if (!value.empty()) values.emplace_back(value);
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
  }
  return values;
}

// --over values: --run 'CMD {}' deploys each probed value, then --trace is replayed against it.
void values_axis(BisectArgs& args, Probes& probes, sweep::BisectAxis& axis, std::atomic<bool>& stop) {
  probes.values = split_values(args.items);
  if (probes.values.size() < 2)
    throw std::invalid_argument("--over values needs at least two values: v1,v2,...");
  if (args.run.empty())
    throw std::invalid_argument("--over values needs --run 'CMD {}' (run before each probe, {} "
                                "replaced by the value)");
  need_replay(args, "values");
  probes.trace = replay::load_input(args.trace, sweep::to_replay_options(args.replay, args.target, 1, {}),
                                    std::cerr, "bisect");
  probes.dir = make_out_dir(args.out, args.force);
  for (std::size_t index = 0; index < probes.values.size(); ++index)
    check_output_file(probes.dir / probe_file(index, probes.values[index]), {args.trace}, true, "--out");
  axis.name = "values";
  for (const auto& value : probes.values) axis.point_labels.push_back("value " + value);
  axis.run_for = [&](std::size_t index) {
    const std::string& value = probes.values[index];
    std::string shell_command = substitute(args.run, value);
    (args.json ? std::cerr : std::cout) << "  $ " << shell_command << "\n" << std::flush;
    auto result = sweep::run_shell(shell_command);
    if (result.exit_code != 0)
      throw std::runtime_error("--run command failed for value " + value + " (exit " +
                               std::to_string(result.exit_code) + "): " + shell_command +
                               "\n--- its output:\n" + result.output + "--- end of output");
    return sweep::replay_at(*probes.trace, args.trace, args.replay, args.target, args.concurrency,
                            {{"run", "bisect-" + file_safe(value)}, {"value", value}},
                            probes.dir / probe_file(index, value), &stop, nullptr);
  };
}

int run_bisect_command(BisectArgs& args) {
  sweep::BisectAxis axis;
  axis.diff.near_tie = args.near_tie;
  axis.max_error_rate = args.replay.max_error_rate;
  std::atomic<bool> stop{false};
  Probes probes;
  if (args.over == "concurrency") concurrency_axis(args, probes, axis, stop);
  else if (args.over == "runs") runs_axis(args, axis);
  else if (args.over == "values") values_axis(args, probes, axis, stop);
  else throw std::invalid_argument("--over must be concurrency, runs or values");
  const fs::path& dir = probes.dir;

  sweep::BisectResult result;
  try {
    StopOnSignals signals(stop, "\nretrace: stopping: cutting the run in flight (Ctrl-C again to quit at once)\n");
    // With --json, stdout carries the one JSON document; the probes' progress goes to stderr.
    result = sweep::run_bisect(axis, args.json ? std::cerr : std::cout);
  } catch (const sweep::RequestsFailed& e) {
    std::cerr << "bisect: " << e.what() << "\n";
    return kExitRunsFailed;
  }
  if (args.json)
    std::cout << sweep::bisect_json(axis, result, dir);
  else if (!dir.empty())
    std::cout << "runs are in " << dir.string() << "\n";
  return result.boundary ? kExitDiffer : kExitOk;
}

}  // namespace

void add_bisect(CLI::App& root, Registry& registry) {
  auto args = std::make_shared<BisectArgs>();
  CLI::App* command = root.add_subcommand(
      "bisect",
      "Find the first point along an ordered axis whose outputs differ from the baseline (the "
      "first point), by binary search: it assumes that once outputs differ they keep differing, "
      "says so, and checks the boundary's neighbours. --over concurrency replays --trace at each "
      "probed level of --range; --over runs compares recorded runs BASE RUN1 RUN2... in order; "
      "--over values runs --run 'CMD {}' with each probed value (e.g. a script that deploys a "
      "version) before replaying, and stops when CMD fails. Exit 0 when no point differs, 1 when "
      "a boundary is found, 2 when nothing could run (bad input, nothing answers at the target, "
      "CMD failed), 3 when a probe had more failed requests than --max-error-rate allows.");
  command->footer(
      "Examples:\n"
      "  retrace bisect --over concurrency --range 1..64 --trace gold.rtrace --target http://127.0.0.1:8000\n"
      "  retrace bisect --over runs monday.rtrace tuesday.rtrace wednesday.rtrace\n"
      "  retrace bisect --over values v1,v2,v3,v4 --run './deploy.sh {}' --trace gold.rtrace "
      "--target http://127.0.0.1:8000");
  command->add_option("--over", args->over, "The axis: concurrency, runs or values")->required();
  command->add_option("ITEMS", args->items, "--over runs: BASE RUN1 RUN2...; --over values: v1,v2,...");
  command->add_option("--range", args->range, "--over concurrency: FROM..TO, e.g. 1..64");
  command->add_option("--trace", args->trace, "The trace to replay at each probe");
  command->add_option("--target", args->target, "Base URL of the server");
  command->add_option("--run", args->run, "--over values: shell command run before each probe; {} is the value");
  command->add_option("--concurrency,-c,--max-concurrency", args->concurrency,
                      "--over values: replay concurrency")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  command->add_option("--out,-o", args->out,
                      "Directory for the probe runs (default: a new retrace-bisect-* directory)");
  add_force_flag(*command, args->force, "Write the probe runs into an existing, non-empty --out");
  add_near_tie_option(*command, args->near_tie, "Logprob margin under which a divergence counts as a near-tie flip");
  command->add_flag("--json", args->json,
                    "Print the result as one JSON document on stdout (progress goes to stderr)");
  add_request_flags(*command, args->replay);
  registry.add(command, [args] { return run_bisect_command(*args); });
}

}  // namespace retrace::cli
