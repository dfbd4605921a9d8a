// `retrace inspect`: what a trace holds, how big it is, and whether it is whole.
#include <algorithm>
#include <boost/json.hpp>
#include <cstdio>
#include <iostream>
#include <map>
#include <optional>
#include <set>

#include "cli/commands.hpp"
#include "format/json.hpp"
#include "format/output_tokens.hpp"
#include "format/trace.hpp"
#include "report/header.hpp"
#include "report/text.hpp"

namespace retrace::cli {

namespace {

struct Summary {
  std::uint64_t exchanges = 0;
  std::uint64_t with_expected = 0;
  std::map<std::string, std::uint64_t> errors;       // by kind
  std::map<std::string, std::uint64_t> token_kinds;  // choices by kind
  std::map<std::uint16_t, std::uint64_t> statuses;
  std::set<std::string> sessions;
  OutputTokenTally tokens;  // output_tokens(): the server's usage when present, else counted
  std::uint64_t choices = 0;
  std::int64_t first_start_ns = 0;  // 0: no wall-clock times (imported traces)
  std::int64_t last_end_ns = 0;
  // The trace's own clock, for traces without wall-clock times (an imported Mooncake or Bailian
  // trace's rows carry their send offsets): the earliest send and the latest send or end.
  std::int64_t first_offset_ns = INT64_MAX;
  std::int64_t last_offset_ns = 0;
  std::uint64_t min_id = 0;
  std::uint64_t max_id = 0;
};

void add(Summary& summary, const Exchange& exchange) {
  if (summary.exchanges == 0) summary.min_id = summary.max_id = exchange.id;
  summary.min_id = std::min(summary.min_id, exchange.id);
  summary.max_id = std::max(summary.max_id, exchange.id);
  ++summary.exchanges;
  if (exchange.expected) ++summary.with_expected;
  if (exchange.error.kind != ErrorKind::none) ++summary.errors[std::string(to_string(exchange.error.kind))];
  if (exchange.response.status != 0) ++summary.statuses[exchange.response.status];
  if (!exchange.session_id.empty()) summary.sessions.insert(exchange.session_id);
  for (const auto& choice : exchange.choices) {
    ++summary.choices;
    ++summary.token_kinds[std::string(to_string(choice.kind))];
  }
  summary.tokens.add(output_tokens(exchange));
  if (exchange.start_unix_ns > 0) {
    std::int64_t end = exchange.start_unix_ns + std::max<std::int64_t>(exchange.end_ns, 0);
    if (summary.first_start_ns == 0 || exchange.start_unix_ns < summary.first_start_ns)
      summary.first_start_ns = exchange.start_unix_ns;
    summary.last_end_ns = std::max(summary.last_end_ns, end);
  }
  summary.first_offset_ns = std::min(summary.first_offset_ns, exchange.intended_send_ns);
  summary.last_offset_ns = std::max(summary.last_offset_ns,
                                    exchange.intended_send_ns + std::max<std::int64_t>(exchange.end_ns, 0));
}

// Seconds between the first and last send offsets, when there are no wall-clock times and the
// offsets say more than "all at once" (a dataset's requests are all at 0).
std::optional<double> offset_span_s(const Summary& summary) {
  if (summary.first_start_ns || summary.exchanges == 0 || summary.last_offset_ns <= summary.first_offset_ns)
    return std::nullopt;
  return (summary.last_offset_ns - summary.first_offset_ns) / 1e9;
}

// A header field that holds JSON text (settings, server info), as the JSON it holds: an object
// for a person or jq to read, not a string to parse again. null when empty; kept as a string when
// it is not JSON (an old or foreign trace).
boost::json::value nested_json(const std::string& text) {
  if (text.empty()) return nullptr;
  boost::json::error_code ec;
  auto value = boost::json::parse(text, ec);
  return ec ? boost::json::value(text) : value;
}

int run_inspect(const std::string& path, bool as_json) {
  TraceReader reader(path);
  Summary summary;
  Exchange exchange;
  while (reader.next(exchange)) add(summary, exchange);
  const TraceHeader& header = reader.header();
  const Recovery& recovery = reader.recovery();
  double ratio = reader.file_size() ? double(reader.decompressed_bytes()) / reader.file_size() : 0;
  double bytes_per_token = summary.tokens.total ? double(reader.file_size()) / summary.tokens.total : 0;
  double span_s = summary.first_start_ns ? (summary.last_end_ns - summary.first_start_ns) / 1e9 : 0;

  if (as_json) {
    boost::json::object out;
    out["schema_version"] = report::kJsonSchemaVersion;
    out["file"] = path;
    auto header_object = to_json(header);
    header_object["settings"] = nested_json(header.settings);
    header_object["server_info"] = nested_json(header.server_info);
    out["header"] = std::move(header_object);
    boost::json::object counts;
    counts["exchanges"] = summary.exchanges;
    counts["with_expected"] = summary.with_expected;
    boost::json::object errors;
    for (const auto& [kind, count] : summary.errors) errors[kind] = count;
    counts["errors"] = std::move(errors);
    boost::json::object statuses;
    for (const auto& [status, count] : summary.statuses) statuses[std::to_string(status)] = count;
    counts["statuses"] = std::move(statuses);
    counts["sessions"] = summary.sessions.size();
    counts["choices"] = summary.choices;
    counts["tokens"] = summary.tokens.total;
    counts["tokens_source"] = summary.tokens.source();
    boost::json::object kinds;
    for (const auto& [kind, count] : summary.token_kinds) kinds[kind] = count;
    counts["token_kinds"] = std::move(kinds);
    out["counts"] = std::move(counts);
    if (summary.exchanges) {
      out["first_id"] = summary.min_id;
      out["last_id"] = summary.max_id;
    }
    if (summary.first_start_ns) {
      out["time_span"] = boost::json::object{{"first_start_unix_ns", summary.first_start_ns},
                                             {"last_end_unix_ns", summary.last_end_ns},
                                             {"seconds", span_s}};
    } else if (auto offsets = offset_span_s(summary)) {
      out["time_span"] = boost::json::object{{"first_send_offset_ns", summary.first_offset_ns},
                                             {"last_offset_ns", summary.last_offset_ns},
                                             {"seconds", *offsets}};
    } else {
      out["time_span"] = nullptr;
    }
    out["file_bytes"] = reader.file_size();
    out["decompressed_bytes"] = reader.decompressed_bytes();
    out["compression_ratio"] = ratio;
    out["bytes_per_token"] = summary.tokens.total ? boost::json::value(bytes_per_token) : nullptr;
    out["torn"] = recovery.torn;
    if (!recovery.clean())
      out["recovery"] = boost::json::object{
          {"dropped_from_offset", recovery.torn ? boost::json::value(recovery.dropped_from_offset) : nullptr},
          {"dropped_bytes", recovery.dropped_bytes},
          {"reason", recovery.torn ? boost::json::value(recovery.reason) : nullptr},
          {"skipped_regions", recovery.skipped_regions},
          {"skipped_bytes", recovery.skipped_bytes},
          {"first_skipped_offset", recovery.skipped_regions ? boost::json::value(recovery.first_skipped_offset) : nullptr},
          {"skipped_reason", recovery.skipped_regions ? boost::json::value(recovery.skipped_reason) : nullptr}};
    out["index"] = reader.has_index();
    std::cout << report::json_text(out) << "\n";
    return kExitOk;
  }

  std::cout << path << "\n";
  std::cout << "  format        " << header.format_major << "." << header.format_minor
            << " (written by retrace " << header.tool_version << ")\n";
  std::cout << "  source        " << to_string(header.source) << "\n";
  std::cout << "  target        " << header.target << "\n";
  std::cout << "  created       " << (header.created_unix_ns ? report::utc_time(header.created_unix_ns) : "?")
            << (header.host.empty() ? "" : " on " + header.host) << "\n";
  if (!header.settings.empty()) std::cout << "  settings      " << header.settings << "\n";
  for (const auto& label : header.labels)
    std::cout << "  label         " << label.key << "=" << label.value << "\n";
  if (!header.server_info.empty()) std::cout << "  server        " << header.server_info << "\n";
  std::cout << "  exchanges     " << summary.exchanges;
  if (summary.exchanges) std::cout << " (ids " << summary.min_id << ".." << summary.max_id << ")";
  std::cout << "\n";
  if (summary.with_expected) std::cout << "  expected      " << summary.with_expected << " with an expected answer\n";
  std::cout << "  errors        ";
  std::uint64_t total_errors = 0;
  for (const auto& [kind, count] : summary.errors) total_errors += count;
  std::cout << total_errors;
  for (const auto& [kind, count] : summary.errors) std::cout << "  " << kind << "=" << count;
  std::cout << "\n";
  if (!summary.statuses.empty()) {
    std::cout << "  statuses     ";
    for (const auto& [status, count] : summary.statuses) std::cout << " " << status << "=" << count;
    std::cout << "\n";
  }
  std::cout << "  sessions      " << summary.sessions.size() << "\n";
  std::cout << "  tokens        " << summary.tokens.total << " (" << summary.tokens.source() << ") in "
            << summary.choices << " choices";
  for (const auto& [kind, count] : summary.token_kinds) std::cout << "  " << kind << "=" << count;
  std::cout << "\n";
  if (summary.first_start_ns)
    std::cout << "  time span     " << report::fixed(span_s, 3) << " s from " << report::utc_time(summary.first_start_ns) << "\n";
  else if (auto offsets = offset_span_s(summary))
    std::cout << "  time span     " << report::fixed(*offsets, 3)
              << " s of send offsets (the trace's own clock; it has no wall-clock times)\n";
  else
    std::cout << "  time span     none (no exchange was sent)\n";
  std::cout << "  file size     " << reader.file_size() << " bytes ("
            << reader.decompressed_bytes() << " decompressed, ratio " << report::fixed(ratio, 2) << ")\n";
  if (summary.tokens.total) std::cout << "  per token     " << report::fixed(bytes_per_token, 1) << " bytes\n";
  if (recovery.clean())
    std::cout << "  damage        none\n";
  else
    std::cout << "  damage        " << describe(recovery) << "\n";
  std::cout << "  index         " << (reader.has_index() ? "present" : "absent") << "\n";
  return kExitOk;
}

}  // namespace

void add_inspect(CLI::App& root, Registry& registry) {
  auto path = std::make_shared<std::string>();
  auto as_json = std::make_shared<bool>(false);
  CLI::App* command = root.add_subcommand(
      "inspect",
      "Summarise a trace: its header (format version, source, target, settings, host, labels), "
      "counts (exchanges, errors by kind, HTTP statuses, sessions, tokens and what kind they "
      "are), the time span, file size, decompressed size, compression ratio and bytes per token, "
      "whether the tail was torn (and how much was dropped from where), and whether the index "
      "is present.");
  command->footer("Example:\n  retrace inspect traces/gold-intents.rtrace --json | jq .counts");
  command->add_option("TRACE", *path, "the .rtrace file")->required();
  command->add_flag("--json", *as_json, "one JSON object on stdout, for machines");
  registry.add(command, [path, as_json] { return run_inspect(*path, *as_json); });
}

}  // namespace retrace::cli
