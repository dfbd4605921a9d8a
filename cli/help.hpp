// What retrace says about itself: the top-level help (commands grouped by what users do, one line
// each), `retrace help [COMMAND]`, and `retrace completion bash`, generated from the command tree
// so that the help, the man page and the completion never drift from the commands.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "cli/commands.hpp"

namespace retrace::cli {

// A heading of the top-level help and its commands, each (name, one-line summary).
struct CommandGroup {
  std::string heading;
  std::vector<std::pair<std::string, std::string>> commands;
};

// Puts every named command under its heading and makes the top-level help list each command by
// its one-line summary (a command's own --help keeps its full description). Call after every
// command is added; throws std::logic_error when a group names a command that does not exist.
void group_commands(CLI::App& root, const std::vector<CommandGroup>& groups);

// `retrace help [COMMAND]` and `retrace help --all`.
void add_help(CLI::App& root, Registry& registry);

// `retrace completion bash`: a bash completion script for every command and option. Not listed
// in the top-level help (the footer names it); packages install its output.
void add_completion(CLI::App& root, Registry& registry);

}  // namespace retrace::cli
