// Each subcommand lives in its own cli/cmd_<name>.cpp and registers itself here. Only cli/ knows
// CLI11; the stages it wires never see it.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <memory>
#include <utility>
#include <vector>

namespace retrace::cli {

// Exit codes shared by every command (diff(1) style where a command compares things).
inline constexpr int kExitOk = 0;
inline constexpr int kExitDiffer = 1;
inline constexpr int kExitError = 2;  // nothing could run: bad input, nothing answers at the target
// Requests failed beyond --max-error-rate: replay says 1; sweep and bisect, where 1 already means
// "outputs differ", say 3.
inline constexpr int kExitRequestsFailed = 1;
inline constexpr int kExitRunsFailed = 3;

class Registry {
 public:
  // `run` is called when `command` was chosen on the command line; it returns the exit code.
  void add(CLI::App* command, std::function<int()> run) {
    commands_.emplace_back(command, std::move(run));
  }
  const std::vector<std::pair<CLI::App*, std::function<int()>>>& commands() const {
    return commands_;
  }

 private:
  std::vector<std::pair<CLI::App*, std::function<int()>>> commands_;
};

// One per subcommand; main() calls each.
void add_import(CLI::App& root, Registry& registry);
void add_export(CLI::App& root, Registry& registry);
void add_inspect(CLI::App& root, Registry& registry);
void add_cat(CLI::App& root, Registry& registry);
void add_sweep(CLI::App& root, Registry& registry);
void add_study(CLI::App& root, Registry& registry);
void add_bisect(CLI::App& root, Registry& registry);
void add_demo(CLI::App& root, Registry& registry);
void add_record(CLI::App& root, Registry& registry);
void add_shadow(CLI::App& root, Registry& registry);
void add_replay(CLI::App& root, Registry& registry);
void add_merge(CLI::App& root, Registry& registry);
void add_stats(CLI::App& root, Registry& registry);
void add_serve(CLI::App& root, Registry& registry);
void add_diff(CLI::App& root, Registry& registry);
void add_report(CLI::App& root, Registry& registry);

}  // namespace retrace::cli
