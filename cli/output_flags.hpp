// How a command prints its results: text (the default), --json, --csv or --markdown, and the
// latency percentiles (--percentiles). One set of names and help texts for stats and replay; the
// rendering is report/'s.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "report/replay_report.hpp"

namespace retrace::cli {

struct OutputFlags {
  bool json = false;
  bool csv = false;
  bool markdown = false;
  std::string percentiles;  // empty: report::kDefaultPercentiles
};

// Adds --json, --csv, --markdown (at most one of them) and --percentiles. `csv_help` says what the
// command's CSV rows are.
void add_output_flags(CLI::App& command, OutputFlags& flags, const std::string& csv_help);

// The stats context every format shares: the percentiles asked for, and the terminal width for
// text (0 when stdout is not a terminal: a pipe or file gets the full table).
report::StatsContext stats_context(const OutputFlags& flags);

// --near-tie (diff, report, study, sweep, bisect): a margin in nats, finite and not negative (nan,
// inf and -1 refused by name). `help` says what it decides for the command.
CLI::Option* add_near_tie_option(CLI::App& command, double& near_tie, const std::string& help);

// Columns of the terminal on stdout: $COLUMNS, else the terminal's own size; 0 when stdout is not
// a terminal.
std::size_t terminal_width();

}  // namespace retrace::cli
