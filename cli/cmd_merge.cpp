// `retrace merge SHARD... -o RUN.rtrace`: the shard runs of one replay as one run (replay/merge.hpp).
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <stdexcept>

#include "cli/commands.hpp"
#include "cli/output_flags.hpp"
#include "cli/outputs.hpp"
#include "format/segments.hpp"
#include "replay/merge.hpp"
#include "replay/replay.hpp"
#include "report/header.hpp"
#include "report/replay_report.hpp"

namespace retrace::cli {
namespace {

struct MergeArgs {
  std::vector<std::string> shards;
  std::string out;
  bool force = false;
  bool allow_missing = false;
  bool stats = false;
  std::string source;
};

// The run's report as `retrace stats` prints it, after the merge whatever its status (a
// container without a shell cannot run `merge; stats`).
void print_stats(const std::string& path) {
  auto stats = replay::stats_of_trace(path, replay::Slo{});
  auto context = stats_context(OutputFlags{});
  context.title = path;
  context.header = report::header_of_trace(path);
  std::cout << "\n" << report::render_stats_text(stats, context);
}

std::string milliseconds(std::int64_t ns) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f ms", static_cast<double>(ns) / 1e6);
  return text;
}

std::string offset_text(const std::optional<std::int64_t>& offset_ns) {
  if (!offset_ns) return "unknown (the shard did not finish)";
  char text[48];
  std::snprintf(text, sizeof text, "%+.3f ms", static_cast<double>(*offset_ns) / 1e6);
  return text;
}

// A directory given as a shard stands for the shard outputs in it: every *.rtrace, and a
// *.rtrace.partial where its shard left no *.rtrace (killed mid-run). A job without a shell
// (deploy/kubernetes/merge.yaml) cannot glob, nor pick the .partial of the shard that failed.
std::vector<std::filesystem::path> shard_paths(const std::vector<std::string>& given) {
  namespace fs = std::filesystem;
  std::vector<fs::path> paths;
  for (const auto& name : given) {
    if (!fs::is_directory(name) || is_segment_set(name)) {  // a segment set is one trace
      paths.emplace_back(name);
      continue;
    }
    std::vector<fs::path> found;
    for (const auto& entry : fs::directory_iterator(name)) {
      if (!entry.is_regular_file()) continue;
      auto file = entry.path().filename().string();
      auto ends_with = [&](std::string_view suffix) {
        return file.size() > suffix.size() && file.compare(file.size() - suffix.size(), suffix.size(), suffix) == 0;
      };
      bool partial_of_missing = ends_with(".rtrace.partial") &&
                                !fs::exists(entry.path().parent_path() / file.substr(0, file.size() - 8));
      if (ends_with(".rtrace") || partial_of_missing) found.push_back(entry.path());
    }
    if (found.empty())
      throw std::invalid_argument(name + " holds no shard outputs (*.rtrace, or *.rtrace.partial "
                                  "from a shard killed mid-run); give the directory replay "
                                  "--shard wrote its --out files into");
    std::sort(found.begin(), found.end());
    paths.insert(paths.end(), found.begin(), found.end());
  }
  return paths;
}

int run(const MergeArgs& args) {
  auto inputs = shard_paths(args.shards);
  const auto shard_count = inputs.size();
  replay::MergeOptions options;
  if (!args.source.empty()) {
    options.source_trace = args.source;
    inputs.push_back(args.source);
  }
  check_output_file(args.out, inputs, args.force, "--out");
  inputs.resize(shard_count);
  auto result = replay::merge_shards(inputs, args.out, options);
  for (const auto& shard : result.shards) {
    std::cout << "shard " << shard.index << "/" << result.shard_count << "  " << shard.path.string()
              << "  host " << (shard.host.empty() ? "?" : shard.host) << "  start "
              << (shard.start_at.empty() ? "(own clock)" : shard.start_at) << "  clock offset "
              << offset_text(shard.clock_offset_ns) << "  " << shard.present << " of "
              << shard.selected << " exchanges\n";
    if (!shard.recovery.clean())
      std::cerr << "retrace: warning: " << shard.path.string() << ": " << describe(shard.recovery)
                << "\n";
  }
  std::cout << "merged " << result.exchanges << " exchanges from " << result.shards.size()
            << " shards into " << args.out;
  if (result.total_concurrency > 0) std::cout << " (total concurrency " << result.total_concurrency << ")";
  std::cout << "\n";
  if (result.clock_offset_spread_ns) {
    std::cout << "clock offsets spread " << milliseconds(*result.clock_offset_spread_ns)
              << " across the shards (how far apart they began, by their own clocks)\n";
    if (*result.clock_offset_spread_ns > replay::kClockSpreadWarnNs)
      std::cerr << "retrace: warning: the shards began " << milliseconds(*result.clock_offset_spread_ns)
                << " apart, more than " << milliseconds(replay::kClockSpreadWarnNs)
                << " (hosts in one datacenter under NTP agree within 1-5 ms): a shard started "
                   "late (give --start-at more lead) or a host's clock is off (check its NTP "
                   "sync); the merged send times are only as close as that\n";
  }
  if (args.stats) print_stats(args.out);
  std::cout.flush();
  if (result.missing == 0 && result.absent_shards.empty()) return kExitOk;
  for (std::size_t a = 0; a < result.absent_shards.size(); ++a) {
    std::cerr << "retrace: shard " << result.absent_shards[a] << "/" << result.shard_count
              << " left no output (it never started, or its file is not among those given): ";
    if (a < result.absent_selected.size())
      std::cerr << "its " << result.absent_selected[a] << " exchanges are missing\n";
    else
      std::cerr << "all its exchanges are missing (--trace counts them)\n";
  }
  constexpr std::size_t kListed = 20;
  for (const auto& shard : result.shards) {
    if (!shard.missing()) continue;
    std::cerr << "retrace: shard " << shard.index << "/" << result.shard_count << " ("
              << shard.path.string() << ") is missing " << shard.missing() << " of its "
              << shard.selected << " exchanges";
    for (std::size_t i = 0; i < shard.missing_ids.size() && i < kListed; ++i)
      std::cerr << (i ? ", " : ": source ids ") << shard.missing_ids[i];
    if (shard.missing_ids.size() > kListed)
      std::cerr << " and " << shard.missing_ids.size() - kListed << " more";
    std::cerr << "\n";
  }
  std::cerr << "retrace: " << result.missing << " exchanges"
            << (result.absent_shards.size() > result.absent_selected.size() ? " (and those of the absent shards)" : "")
            << " missing from " << args.out
            << (args.allow_missing ? " (allowed by --allow-missing)\n"
                                   : "; the merged run holds the rest. Re-run the incomplete "
                                     "shards, or pass --allow-missing to accept it\n");
  return args.allow_missing ? kExitOk : kExitRequestsFailed;
}

}  // namespace

void add_merge(CLI::App& root, Registry& registry) {
  auto args = std::make_shared<MergeArgs>();
  auto* command = root.add_subcommand(
      "merge",
      "Merge the shard runs of one sharded replay (replay --shard I/N) into one run that stats, "
      "diff and report read as an unsharded one.");
  command->footer(
      "Example:\n"
      "  T=$(( $(date +%s) + 30 ))\n"
      "  for i in 0 1 2 3; do retrace replay prod.rtrace --target http://gpu:8000 --rate 40 \\\n"
      "      --shard $i/4 --start-at $T --out shard$i.rtrace & done; wait\n"
      "  retrace merge shard*.rtrace -o run.rtrace\n"
      "  retrace merge shards/ --trace prod.rtrace -o run.rtrace --stats\n"
      "Refused (exit 2, nothing written): shards of different traces, different shard counts, a "
      "shard given twice, other settings (anything but --shard and --start-at).\n"
      "A shard killed mid-run leaves OUT.partial: give it instead; its exchanges are merged and "
      "the missing ones counted, or named with --trace SRC (exit 1 unless --allow-missing). A "
      "shard that left no file (never started) is named and the others merged, also exit 1 "
      "unless --allow-missing.\n"
      "Exit status: 0 merged, every exchange present; 1 merged with exchanges missing; 2 refused.");
  command->add_option("shards", args->shards,
                      "Every shard's output (.rtrace, or .rtrace.partial), or a directory of them "
                      "(its *.rtrace, and the .partial of a shard that left none)")
      ->required()
      ->check(CLI::ExistingPath);
  command->add_option("--out,-o", args->out, "The merged run")->required();
  add_force_flag(*command, args->force, "Replace an existing --out (never a shard)");
  command->add_option("--trace", args->source,
                      "The trace the shards replayed: name the missing exchanges by source id "
                      "(loads it whole; a segment directory is one trace)")
      ->check(CLI::ExistingPath);
  command->add_flag("--stats", args->stats,
                    "Then print the merged run's report (as `retrace stats` does), also when "
                    "exchanges are missing");
  command->add_flag("--allow-missing", args->allow_missing,
                    "Exit 0 even when shards lack exchanges they selected (killed or stopped)");
  registry.add(command, [args] { return run(*args); });
}

}  // namespace retrace::cli
