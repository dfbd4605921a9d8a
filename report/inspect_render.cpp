// `retrace inspect`'s summary and its two renderings: see report/inspect_render.hpp.
#include "report/inspect_render.hpp"

#include <algorithm>
#include <boost/json.hpp>
#include <optional>
#include <sstream>
#include <type_traits>

#include "format/json.hpp"
#include "format/segments.hpp"
#include "report/header.hpp"
#include "report/text.hpp"

namespace retrace::report {

namespace json = boost::json;

void TraceCounts::add(const Exchange& exchange) {
  if (exchanges == 0) min_id = max_id = exchange.id;
  min_id = std::min(min_id, exchange.id);
  max_id = std::max(max_id, exchange.id);
  ++exchanges;
  if (exchange.expected) ++with_expected;
  if (exchange.error.kind != ErrorKind::none) ++errors[std::string(to_string(exchange.error.kind))];
  if (exchange.response.status != 0) ++statuses[exchange.response.status];
  if (!exchange.session_id.empty()) sessions.insert(exchange.session_id);
  for (const auto& choice : exchange.choices) {
    ++choices;
    ++token_kinds[std::string(to_string(choice.kind))];
  }
  tokens.add(output_tokens(exchange));
  if (exchange.start_unix_ns > 0) {
    std::int64_t end = exchange.start_unix_ns + std::max<std::int64_t>(exchange.end_ns, 0);
    if (first_start_ns == 0 || exchange.start_unix_ns < first_start_ns)
      first_start_ns = exchange.start_unix_ns;
    last_end_ns = std::max(last_end_ns, end);
  }
  first_offset_ns = std::min(first_offset_ns, exchange.intended_send_ns);
  last_offset_ns =
      std::max(last_offset_ns, exchange.intended_send_ns + std::max<std::int64_t>(exchange.end_ns, 0));
}

Inspection inspect_trace(const std::string& path) {
  TraceReader reader(path);
  Inspection inspection;
  inspection.segment_set = is_segment_set(path);
  // A set's rows: one per segment listed, each filled as its exchanges go by (position().segment);
  // a segment the reader left with more damage noted than before is torn (its tail) or damaged.
  std::vector<std::uint64_t> numbers;
  if (inspection.segment_set) numbers = list_segments(path).numbers;
  std::size_t row = 0;
  std::uint64_t damage_before = 0;
  auto damage = [&] { return reader.recovery().skipped_regions + reader.recovery().skipped_bytes; };
  auto add_rows_up_to = [&](std::uint64_t number) {
    auto& rows = inspection.segments;
    for (; row < numbers.size() && numbers[row] <= number; ++row) {
      if (!rows.empty() && numbers[row] > rows.back().number + 1)
        rows.push_back({.number = rows.back().number + 1, .state = "missing"});
      std::error_code ignored;
      auto bytes = std::filesystem::file_size(std::filesystem::path(path) / segment_file_name(numbers[row]), ignored);
      rows.push_back({.number = numbers[row], .bytes = ignored ? 0 : bytes});
    }
  };
  auto leave_rows = [&] {
    if (inspection.segments.empty()) return;
    if (damage() != damage_before) inspection.segments.back().state = "damaged";
    damage_before = damage();
  };
  Exchange exchange;
  while (reader.next(exchange)) {
    inspection.counts.add(exchange);
    if (!inspection.segment_set) continue;
    auto number = reader.position().segment;
    if (inspection.segments.empty() || inspection.segments.back().number != number) {
      leave_rows();
      add_rows_up_to(number);
    }
    auto& current = inspection.segments.back();
    ++current.exchanges;
    if (exchange.start_unix_ns > 0) {
      if (current.first_start_ns == 0) current.first_start_ns = exchange.start_unix_ns;
      current.last_end_ns = std::max(current.last_end_ns,
                                     exchange.start_unix_ns + std::max<std::int64_t>(exchange.end_ns, 0));
    }
  }
  if (inspection.segment_set) {
    leave_rows();
    add_rows_up_to(UINT64_MAX);
    if (reader.recovery().torn && !inspection.segments.empty()) inspection.segments.back().state = "torn";
  }
  inspection.path = path;
  inspection.header = reader.header();
  inspection.recovery = reader.recovery();
  inspection.file_bytes = reader.file_size();
  inspection.decompressed_bytes = reader.decompressed_bytes();
  inspection.has_index = reader.has_index();
  return inspection;
}

namespace {

// Seconds between the first and last send offsets, when there are no wall-clock times and the
// offsets say more than "all at once" (a dataset's requests are all at 0).
std::optional<double> offset_span_s(const TraceCounts& counts) {
  if (counts.first_start_ns || counts.exchanges == 0 || counts.last_offset_ns <= counts.first_offset_ns)
    return std::nullopt;
  return (counts.last_offset_ns - counts.first_offset_ns) / 1e9;
}

double wall_span_s(const TraceCounts& counts) {
  return counts.first_start_ns ? (counts.last_end_ns - counts.first_start_ns) / 1e9 : 0;
}

double compression_ratio(const Inspection& inspection) {
  return inspection.file_bytes ? double(inspection.decompressed_bytes) / inspection.file_bytes : 0;
}

double bytes_per_token(const Inspection& inspection) {
  return inspection.counts.tokens.total ? double(inspection.file_bytes) / inspection.counts.tokens.total : 0;
}

// A header field that holds JSON text (settings, server info), as the JSON it holds: an object
// for a person or jq to read, not a string to parse again. null when empty; kept as a string when
// it is not JSON (an old or foreign trace).
json::value nested_json(const std::string& text) {
  if (text.empty()) return nullptr;
  json::error_code ec;
  auto value = json::parse(text, ec);
  return ec ? json::value(text) : value;
}

template <typename Map>
json::object count_object(const Map& counts) {
  json::object out;
  for (const auto& [key, count] : counts) {
    if constexpr (std::is_same_v<typename Map::key_type, std::string>)
      out[key] = count;
    else
      out[std::to_string(key)] = count;
  }
  return out;
}

json::object counts_json(const TraceCounts& counts) {
  json::object out;
  out["exchanges"] = counts.exchanges;
  out["with_expected"] = counts.with_expected;
  out["errors"] = count_object(counts.errors);
  out["statuses"] = count_object(counts.statuses);
  out["sessions"] = counts.sessions.size();
  out["choices"] = counts.choices;
  out["tokens"] = counts.tokens.total;
  out["tokens_source"] = counts.tokens.source();
  out["token_kinds"] = count_object(counts.token_kinds);
  return out;
}

json::value time_span_json(const TraceCounts& counts) {
  if (counts.first_start_ns)
    return json::object{{"first_start_unix_ns", counts.first_start_ns},
                        {"last_end_unix_ns", counts.last_end_ns},
                        {"seconds", wall_span_s(counts)}};
  if (auto offsets = offset_span_s(counts))
    return json::object{{"first_send_offset_ns", counts.first_offset_ns},
                        {"last_offset_ns", counts.last_offset_ns},
                        {"seconds", *offsets}};
  return nullptr;
}

json::object recovery_json(const Recovery& recovery) {
  auto when = [](bool present, json::value value) { return present ? value : json::value(nullptr); };
  bool skipped = recovery.skipped_regions != 0;
  return json::object{{"dropped_from_offset", when(recovery.torn, recovery.dropped_from_offset)},
                      {"dropped_bytes", recovery.dropped_bytes},
                      {"reason", when(recovery.torn, json::value(recovery.reason))},
                      {"skipped_regions", recovery.skipped_regions},
                      {"skipped_bytes", recovery.skipped_bytes},
                      {"first_skipped_offset", when(skipped, recovery.first_skipped_offset)},
                      {"skipped_reason", when(skipped, json::value(recovery.skipped_reason))},
                      {"missing_segments", recovery.missing_segments}};
}

// The header, the counts and the time span, as the text view lays them out.
void write_header_text(const TraceHeader& header, std::ostream& out) {
  out << "  format        " << header.format_major << "." << header.format_minor
      << " (written by retrace " << header.tool_version << ")\n";
  out << "  source        " << to_string(header.source) << "\n";
  out << "  target        " << header.target << "\n";
  out << "  created       " << (header.created_unix_ns ? utc_time(header.created_unix_ns) : "?")
      << (header.host.empty() ? "" : " on " + header.host) << "\n";
  if (!header.settings.empty()) out << "  settings      " << header.settings << "\n";
  for (const auto& label : header.labels)
    out << "  label         " << label.key << "=" << label.value << "\n";
  if (!header.server_info.empty()) out << "  server        " << header.server_info << "\n";
}

void write_counts_text(const TraceCounts& counts, std::ostream& out) {
  out << "  exchanges     " << counts.exchanges;
  if (counts.exchanges) out << " (ids " << counts.min_id << ".." << counts.max_id << ")";
  out << "\n";
  if (counts.with_expected) out << "  expected      " << counts.with_expected << " with an expected answer\n";
  std::uint64_t total_errors = 0;
  for (const auto& [kind, count] : counts.errors) total_errors += count;
  out << "  errors        " << total_errors;
  for (const auto& [kind, count] : counts.errors) out << "  " << kind << "=" << count;
  out << "\n";
  if (!counts.statuses.empty()) {
    out << "  statuses     ";
    for (const auto& [status, count] : counts.statuses) out << " " << status << "=" << count;
    out << "\n";
  }
  out << "  sessions      " << counts.sessions.size() << "\n";
  out << "  tokens        " << counts.tokens.total << " (" << counts.tokens.source() << ") in "
      << counts.choices << " choices";
  for (const auto& [kind, count] : counts.token_kinds) out << "  " << kind << "=" << count;
  out << "\n";
}

void write_time_span_text(const TraceCounts& counts, std::ostream& out) {
  if (counts.first_start_ns)
    out << "  time span     " << fixed(wall_span_s(counts), 3) << " s from "
        << utc_time(counts.first_start_ns) << "\n";
  else if (auto offsets = offset_span_s(counts))
    out << "  time span     " << fixed(*offsets, 3)
        << " s of send offsets (the trace's own clock; it has no wall-clock times)\n";
  else
    out << "  time span     none (no exchange was sent)\n";
}

void write_file_text(const Inspection& inspection, std::ostream& out) {
  out << "  file size     " << inspection.file_bytes << " bytes (" << inspection.decompressed_bytes
      << " decompressed, ratio " << fixed(compression_ratio(inspection), 2) << ")\n";
  if (inspection.counts.tokens.total)
    out << "  per token     " << fixed(bytes_per_token(inspection), 1) << " bytes\n";
  if (inspection.recovery.clean())
    out << "  damage        none\n";
  else
    out << "  damage        " << describe(inspection.recovery) << "\n";
  out << "  index         " << (inspection.has_index ? "present" : "absent") << "\n";
}

}  // namespace

std::string render_inspection_json(const Inspection& inspection) {
  const auto& counts = inspection.counts;
  json::object out;
  out["schema_version"] = kJsonSchemaVersion;
  out["file"] = inspection.path;
  auto header_object = to_json(inspection.header);
  header_object["settings"] = nested_json(inspection.header.settings);
  header_object["server_info"] = nested_json(inspection.header.server_info);
  out["header"] = std::move(header_object);
  out["counts"] = counts_json(counts);
  if (counts.exchanges) {
    out["first_id"] = counts.min_id;
    out["last_id"] = counts.max_id;
  }
  out["time_span"] = time_span_json(counts);
  out["file_bytes"] = inspection.file_bytes;
  out["decompressed_bytes"] = inspection.decompressed_bytes;
  out["compression_ratio"] = compression_ratio(inspection);
  out["bytes_per_token"] = counts.tokens.total ? json::value(bytes_per_token(inspection)) : nullptr;
  out["torn"] = inspection.recovery.torn;
  if (!inspection.recovery.clean()) out["recovery"] = recovery_json(inspection.recovery);
  out["index"] = inspection.has_index;
  if (inspection.segment_set) {
    json::array rows;
    for (const auto& segment : inspection.segments)
      rows.push_back(json::object{{"segment", segment.number},
                                  {"file", segment_file_name(segment.number)},
                                  {"state", segment.state},
                                  {"exchanges", segment.exchanges},
                                  {"bytes", segment.bytes},
                                  {"first_start_unix_ns", segment.first_start_ns},
                                  {"last_end_unix_ns", segment.last_end_ns}});
    out["segments"] = std::move(rows);
  }
  return json_text(out) + "\n";
}

std::string render_inspection_text(const Inspection& inspection) {
  std::ostringstream out;
  out << inspection.path << "\n";
  write_header_text(inspection.header, out);
  write_counts_text(inspection.counts, out);
  write_time_span_text(inspection.counts, out);
  write_file_text(inspection, out);
  if (inspection.segment_set) {
    out << "  segments      " << inspection.segments.size() << "\n";
    for (const auto& segment : inspection.segments) {
      out << "    " << segment_file_name(segment.number) << "  " << segment.state;
      if (segment.state != "missing") {
        out << "  " << segment.exchanges << " exchanges  " << segment.bytes << " bytes";
        if (segment.first_start_ns)
          out << "  " << utc_time(segment.first_start_ns) << " .. " << utc_time(segment.last_end_ns);
      }
      out << "\n";
    }
  }
  return out.str();
}

}  // namespace retrace::report
