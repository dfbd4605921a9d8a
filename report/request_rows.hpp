// One CSV row per exchange of a trace: what `stats --csv`, `replay --csv` and `export --csv`
// print. Units are in the column names; an absent value (no TTFT for a non-streamed response, no
// usage from the server) is an empty field, never -1 or 0.
//
// Columns: trace, id, source_id, session_id, status, error, streamed, finish_reason,
// input_tokens, output_tokens, send_ms, intended_send_ms, ttft_ms, tpot_ms, itl_mean_ms, e2e_ms
// (times from the run's start or the request's send, by replay/replay.hpp's definitions), and
// with `with_text` also request (what `cat` shows of it) and output (choice 0's text).
#pragma once

#include <ostream>
#include <string>

#include "format/trace.hpp"

namespace retrace::report {

struct RequestRowOptions {
  bool with_text = false;   // add the request and output columns (export)
  bool header_row = true;   // start with the column names
};

// Writes the rows of every exchange in the trace at `path` to `out`; returns what the reader
// recovered from (a torn tail ends the rows; the caller warns). Throws TraceError when `path` is
// not a readable trace. Stops early, quietly, once `out` fails (a closed pipe).
Recovery write_request_rows(const std::string& path, std::ostream& out,
                            const RequestRowOptions& options = {});

// The column names, and one exchange's row (for tests and callers that hold exchanges).
std::string request_rows_header(const RequestRowOptions& options);
std::string request_row(std::string_view trace, const Exchange& exchange,
                        const RequestRowOptions& options);

}  // namespace retrace::report
