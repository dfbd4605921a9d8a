// `retrace export`: every record of a trace as one JSON line on stdout.
#include <cstdio>
#include <iostream>

#include "cli/commands.hpp"
#include "format/json.hpp"
#include "format/trace.hpp"

namespace retrace::cli {

namespace {

// False once stdout is gone (`| head`): a closed pipe ends the export quietly.
bool emit(const std::string& line) {
  if (std::fwrite(line.data(), 1, line.size(), stdout) != line.size()) return false;
  return std::fputc('\n', stdout) != EOF;
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
  std::fflush(stdout);
  const Recovery& recovery = reader.recovery();
  if (!recovery.clean())
    std::cerr << "retrace: warning: " << path << ": " << describe(recovery) << "; exported the "
              << count << " readable exchanges\n";
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
      "when valid UTF-8, else {\"base64\": ...}. A torn tail (a crashed writer) is reported on "
      "stderr with the offset and the bytes dropped; the records before it are still exported "
      "and the exit status stays 0.");
  command->footer(
      "Example:\n  retrace export run.rtrace | jq -c '.exchange | select(.) | {id, status: "
      ".response.status}'");
  command->add_option("TRACE", *path, "the .rtrace file")->required();
  command->add_option("--format", *format, "output format")
      ->check(CLI::IsMember({"jsonl"}))
      ->capture_default_str();
  registry.add(command, [path] { return run_export(*path); });
}

}  // namespace retrace::cli
