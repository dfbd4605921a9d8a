// Turning datasets into traces: `retrace import`.
//
// Input formats, one JSON object per line (blank lines are skipped):
//   jsonl:         {"prompt": "..."} | {"messages": [...]} | {"request": {full body}}
//                  plus optional "expected" (the right answer), "id" (becomes label `id`),
//                  and "model" / "temperature" / "max_tokens" overriding the defaults.
//   openai-batch:  {"custom_id": "...", "method": "POST", "url": "/v1/chat/completions",
//                   "body": {...}}   (the OpenAI Batch API input format)
// Every request body gets "temperature" (default 0) and "max_tokens" (the --max-tokens value;
// the Responses API's "max_output_tokens"; embeddings neither) when it lacks them, and "model" only when --model gives one: a dataset does not know the server it
// will meet (replay gives a body without a model the target's, see replay/preflight.hpp).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "format/trace.hpp"

namespace retrace {

struct ImportOptions {
  std::string from = "jsonl";      // jsonl | openai-batch
  std::string endpoint = "chat";   // chat | completions | responses | messages | embeddings: where
                                   // lines go (dataset/import_endpoints.hpp)
  std::string model;               // "" = bodies keep what the line says (maybe no model)
  std::int64_t max_tokens = 128;
  bool greedy = false;             // temperature 0 on every body, even one that asks for another
  std::string tool_version;
  WriterOptions writer;
};

// What an import met and went past: counted, told to the user, never a reason to stop.
struct ImportNotes {
  std::uint64_t lone_surrogates = 0;  // lone UTF-16 surrogate escapes read as U+FFFD
};

// Reads `in` and writes the trace `out`, through `out`.tmp renamed at the end, so a bad line
// leaves nothing behind. Throws TraceError "IN:LINE: what is wrong" on a bad line, or an I/O
// error. Returns the number of exchanges written.
std::uint64_t import_dataset(const std::filesystem::path& in, const std::filesystem::path& out,
                             const ImportOptions& options, ImportNotes* notes = nullptr);

// `retrace export`'s JSON lines ({"header": ...} then one {"exchange": ...} per line; plain, .gz
// or .zst) back into a trace, so that a trace filtered or edited as text (jq) is a trace again.
// The header line is kept as it was (the trace's own source, target and settings); lines without
// one get an "imported" header. Request and response headers, query parameters and body fields
// go through the default redaction policy again. Written through OUT.tmp like import_dataset;
// throws TraceError "IN:LINE: what is wrong". Returns the number of exchanges written (0 for an
// exported empty trace).
std::uint64_t import_export_lines(const std::filesystem::path& in, const std::filesystem::path& out,
                                  const ImportOptions& options, ImportNotes* notes = nullptr);

}  // namespace retrace
