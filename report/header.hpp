// What a report was measured on, said at its top in every format: server, model, schedule, trace,
// when, and which retrace made the runs. Read from a trace header; a field the header does not
// carry stays empty and is printed as "unknown".
#pragma once

#include <cstdint>
#include <string>

#include <boost/json/object.hpp>

#include "format/trace.hpp"

namespace retrace::report {

struct ReportHeader {
  std::string server;        // the target URL the runs were sent to (or recorded from)
  std::string model;         // first model the server listed at /v1/models
  std::string schedule;      // "concurrency 16", "rate 5/s poisson", "recorded timing ×1"
  std::string trace;         // the input trace
  std::string when;          // creation time of the run, UTC, "2024-05-01T12:00:00Z"
  std::string tool_version;  // retrace version that wrote the trace
};

ReportHeader header_from_trace(const TraceHeader& header);
// The trace controls a run used (window, idle-gap cap, session sample, --requests, --duration), as
// the end of its schedule text: ", window 1000 ms to 60000 ms, 30 requests"; "" when none.
std::string trace_controls(const TraceHeader& header);
// The header of the trace file at `path` (reads its first message only); throws TraceError.
ReportHeader header_of_trace(const std::string& path);

// Unix nanoseconds as UTC, ISO 8601 to the second: "2024-05-01T12:00:00Z".
std::string utc_time(std::int64_t unix_ns);

// One Markdown/terminal line: "server X · model Y · schedule Z · trace T · 2024-… · retrace 0.1.0".
std::string header_line(const ReportHeader& header);
boost::json::object header_json(const ReportHeader& header);

}  // namespace retrace::report
