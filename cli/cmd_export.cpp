// `retrace export`: every record of a trace as one JSON line on stdout.
#include <iostream>

#include "cli/commands.hpp"
#include "format/json.hpp"
#include "format/trace.hpp"
#include "report/metric_series.hpp"
#include "report/request_rows.hpp"

namespace retrace::cli {

namespace {

// False once stdout failed: a closed pipe (`| head`) ends the export quietly, a full disk with
// exit 2 (cli/outputs.hpp, the checked stdout).
bool emit(const std::string& line) {
  std::cout.write(line.data(), static_cast<std::streamsize>(line.size())).put('\n');
  return static_cast<bool>(std::cout);
}

int run_export_csv(const std::string& path) {
  report::RequestRowOptions options;
  options.with_text = true;
  const Recovery recovery = report::write_request_rows(path, std::cout, options);
  if (!recovery.clean())
    std::cerr << "retrace: warning: " << path << ": " << describe(recovery)
              << "; exported the readable exchanges\n";
  return kExitOk;
}

int run_export(const std::string& path) {
  TraceReader reader(path);
  if (!emit(header_line(reader.header()))) return kExitOk;
  Exchange exchange;
  std::uint64_t count = 0;
  while (reader.next(exchange)) {
    if (!emit(exchange_line(exchange))) return kExitOk;
    ++count;
  }
  std::cout.flush();
  const Recovery& recovery = reader.recovery();
  if (!recovery.clean())
    std::cerr << "retrace: warning: " << path << ": " << describe(recovery) << "; exported the "
              << count << " readable exchanges\n";
  return kExitOk;
}

int run_export_metrics(const std::string& path, bool csv) {
  report::MetricSeriesCount count;
  const Recovery recovery = report::write_metric_series(path, std::cout, csv, count);
  std::cout.flush();
  if (!recovery.clean())
    std::cerr << "retrace: warning: " << path << ": " << describe(recovery) << "; exported the "
              << count.scrapes << " readable scrapes\n";
  if (count.scrapes == 0)
    std::cerr << "retrace: " << path << " holds no /metrics series (a replay, sweep or study run "
              << "keeps one when its target serves /metrics, not with --no-scrape; record with --scrape-interval)\n";
  return kExitOk;
}

}  // namespace

void add_export(CLI::App& root, Registry& registry) {
  auto path = std::make_shared<std::string>();
  auto format = std::make_shared<std::string>("jsonl");
  CLI::App* command = root.add_subcommand(
      "export",
      "Print every record of a trace as one JSON object per line on stdout: first "
      "{\"header\": {...}}, then one {\"exchange\": {...}} per exchange. Byte fields are strings "
      "when valid UTF-8, else {\"base64\": ...}. Damage (a torn tail left by a crashed writer, a "
      "corrupt frame skipped) is reported on stderr with its offset and the bytes dropped; every "
      "readable record is still exported and the exit status stays 0. --csv prints one row per request instead, under a header "
      "row (units in the column names).");
  command->footer(
      "Example:\n  retrace export run.rtrace | jq -c '.exchange | select(.) | {id, status: "
      ".response.status}'");
  command->add_option("TRACE", *path, "the .rtrace file")->required();
  auto csv = std::make_shared<bool>(false);
  auto* format_option = command->add_option("--format", *format,
                                            "output format: jsonl (every field), or csv (one row "
                                            "per request: figures, request and output text)")
                            ->check(CLI::IsMember({"jsonl", "csv"}))
                            ->capture_default_str();
  command->add_flag("--csv", *csv, "Same as --format csv (the --csv of stats and replay)")
      ->excludes(format_option);
  auto metrics = std::make_shared<bool>(false);
  command->add_flag("--metrics", *metrics,
                    "Print the target's /metrics series the run kept instead, one value a line: "
                    "{\"t_us\":..., \"series\":\"running\", \"kind\":\"gauge\", \"value\":...} (t_us on "
                    "the run's own clock; counters as the increase since the previous scrape), "
                    "the client's requests in flight as series client_in_flight; with --csv, "
                    "t_us,series,kind,value");
  registry.add(command, [path, format, csv, metrics] {
    if (*metrics) return run_export_metrics(*path, *csv || *format == "csv");
    return *csv || *format == "csv" ? run_export_csv(*path) : run_export(*path);
  });
}

}  // namespace retrace::cli
