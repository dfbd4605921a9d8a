// `retrace import --from export`: the JSON lines `retrace export` writes, back into a trace. The
// round trip for a trace filtered or edited as text:
//   retrace export run.rtrace | jq -c 'select(.header or .exchange.status == 200)' > ok.jsonl
//   retrace import ok.jsonl --out ok.rtrace
#include <boost/json.hpp>
#include <string>

#include "base/described_json.hpp"
#include "dataset/import_settings.hpp"
#include "dataset/json_errors.hpp"
#include "dataset/compressed_input.hpp"
#include "format/header.hpp"
#include "dataset/import.hpp"
#include "dataset/trace_import.hpp"
#include "format/json.hpp"
#include "format/redaction.hpp"
#include "dataset/staged_output.hpp"
#include "base/text.hpp"
#include "base/time.hpp"
#include "dataset/trace_rows.hpp"

namespace retrace {

namespace json = boost::json;

namespace {

// The line's one object, or a TraceError saying where and what is wrong.
json::object parse_line(std::string& line, const std::string& where, ImportNotes* notes) {
  auto lone_surrogates = replace_lone_surrogate_escapes(line);
  if (notes) notes->lone_surrogates += lone_surrogates;
  json::error_code error;
  json::value value = json::parse(line, error);
  if (error) throw TraceError(where + json_error_text(error));
  if (!value.is_object()) throw TraceError(where + "expected a JSON object, one per line");
  return std::move(value.get_object());
}

// The send offsets `--timing recorded` waits out: one edited to before the run's start or past
// the schedule bound (kMaxScheduleSpan, base/time.hpp) would leave a replay waiting in silence, so it is refused here.
void check_send_offsets(const Exchange& exchange, const std::string& where) {
  for (auto [ns, name] : {std::pair{exchange.intended_send_ns, "intended_send_ns"},
                          std::pair{exchange.actual_send_ns, "actual_send_ns"}}) {
    if (ns < 0)
      throw TraceError(where + "\"" + name + "\" " + std::to_string(ns) +
                       " is before the run's start; a send offset is 0 or more nanoseconds");
    if (ns > kMaxScheduleSpan.count())
      throw TraceError(where + "\"" + name + "\" " + std::to_string(ns) +
                       " is more than " + std::to_string(kMaxScheduleYears) +
                       " years after the run's start, which --timing recorded "
                       "would wait out; check the value and its unit (nanoseconds)");
  }
}

bool blank(const std::string& line) { return line.find_first_not_of(" \t") == std::string::npos; }

}  // namespace

std::uint64_t import_export_lines(const std::filesystem::path& in, const std::filesystem::path& out,
                                  const ImportOptions& options, ImportNotes* notes) {
  CompressedInput input(in);
  std::string line;
  while (input.next_line(line) && blank(line)) {
  }
  if (blank(line)) throw TraceError(in.string() + ": no records found (the file is empty)");
  json::object first = parse_line(line, rows::where(input), notes);

  // The exported header is the trace's own history (source, target, settings, server) and is kept
  // as it was; lines without one (hand-written) get a header saying they were imported.
  TraceHeader header;
  bool first_is_header = first.contains("header");
  if (first_is_header) {
    const json::value& value = first.at("header");
    if (!value.is_object()) throw TraceError(rows::where(input) + "\"header\" must be an object");
    try {
      header = header_from_json(value.get_object());
    } catch (const TraceError& e) {
      throw TraceError(rows::where(input) + e.what());
    }
  } else {
    DatasetImportSettings settings;
    settings.from = "export";
    header = new_trace_header(Source::imported, options.tool_version, in.string(),
                              json::serialize(described_json::to_json(settings)), *options.writer.clock);
  }

  StagedOutput staged(in, out);
  // Text edited by hand may have gained a credential: the default policy applies again.
  const Redactor redactor;
  std::uint64_t written = 0;
  {
    TraceWriter writer(staged.temporary(), header, options.writer);
    Exchange exchange;
    auto take = [&](const json::object& object) {
      std::string where = rows::where(input);
      if (object.contains("header"))
        throw TraceError(where + "a second header line; one trace per file (the first line's "
                                 "header is the trace's)");
      const json::value* value = object.if_contains("exchange");
      if (!value || !value->is_object())
        throw TraceError(where + "expected {\"exchange\": {...}} (the lines `retrace export` writes)");
      exchange = Exchange{};
      try {
        exchange_from_json(value->get_object(), exchange);
      } catch (const TraceError& e) {
        throw TraceError(where + e.what());
      }
      check_send_offsets(exchange, where);
      redactor.apply(exchange.request);
      redactor.apply(exchange.response.headers);
      writer.write(exchange);
      ++written;
    };
    if (!first_is_header) take(first);
    while (input.next_line(line))
      if (!blank(line)) take(parse_line(line, rows::where(input), notes));
    writer.close();
  }
  staged.commit();
  return written;
}

}  // namespace retrace
