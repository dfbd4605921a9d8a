#include "cli/output_flags.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>

namespace retrace::cli {

void add_output_flags(CLI::App& command, OutputFlags& flags, const std::string& csv_help) {
  auto* json = command.add_flag("--json", flags.json,
                                "Print JSON: plain decimals, null for what is absent (an array "
                                "when there are several reports)");
  auto* csv = command.add_flag("--csv", flags.csv, csv_help);
  auto* markdown = command.add_flag("--markdown", flags.markdown, "Print Markdown tables");
  json->excludes(csv)->excludes(markdown);
  csv->excludes(markdown);
  command.add_option("--percentiles", flags.percentiles,
                     "Latency percentiles to report, e.g. 50,90,95,99.9 (default 50,90,95,99); exact up to a "
                     "million samples of a figure, past that from a histogram within 0.003 % (the report says so)");
}

report::StatsContext stats_context(const OutputFlags& flags) {
  report::StatsContext context;
  if (!flags.percentiles.empty()) context.percentiles = report::parse_percentiles(flags.percentiles);
  if (!flags.json && !flags.csv && !flags.markdown) context.width = terminal_width();
  return context;
}

std::size_t terminal_width() {
  if (!::isatty(STDOUT_FILENO)) return 0;
  if (const char* columns = std::getenv("COLUMNS")) {
    char* end = nullptr;
    long value = std::strtol(columns, &end, 10);
    if (end != columns && *end == '\0' && value > 0) return static_cast<std::size_t>(value);
  }
  winsize size{};
  if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) return size.ws_col;
  return 80;
}

CLI::Option* add_near_tie_option(CLI::App& command, double& near_tie, const std::string& help) {
  return command.add_option("--near-tie", near_tie, help)
      ->capture_default_str()
      ->type_name("NATS")
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            double value = 0;
            try {
              std::size_t used = 0;
              value = std::stod(text, &used);
              if (used != text.size()) return "--near-tie " + text + ": not a number";
            } catch (const std::exception&) {
              return "--near-tie " + text + ": not a number";
            }
            if (!std::isfinite(value) || value < 0)
              return "--near-tie " + text + ": expected a finite margin of 0 or more nats, e.g. 0.05 (the default)";
            return {};
          },
          "NATS >= 0"));
}

}  // namespace retrace::cli
