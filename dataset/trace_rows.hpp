// Internal to format/: the rows of the public LLM-serving traces, read into one shape that
// dataset/trace_import.cpp turns into exchanges. One reader per family:
//   trace_rows_json.cpp      Mooncake and Qwen-Bailian (JSONL)
//   trace_rows_csv.cpp       Azure LLM inference traces and BurstGPT (CSV with a header row)
//   trace_rows_sharegpt.cpp  ShareGPT (one JSON array of conversations)
// Readers throw TraceError "FILE:LINE: what is wrong" for a malformed row.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dataset/compressed_input.hpp"
#include "format/trace.hpp"

namespace retrace::rows {

struct Message {
  std::string role;  // user | assistant | system
  std::string content;
};

struct TraceRow {
  std::optional<std::int64_t> time_ns;  // the trace's clock (relative or unix); none: no time
  bool time_is_unix = false;            // time_ns is wall-clock unix time (Azure)
  std::int64_t input_tokens = 0;
  std::int64_t output_tokens = 0;       // 0 with messages: take the next reply's length
  std::vector<std::uint64_t> hash_ids;
  std::int64_t block_tokens = 0;        // tokens per hash id block
  std::string session_id;               // "" when the row stands alone
  std::vector<Label> labels;
  std::vector<Message> messages;        // ShareGPT: real text instead of lengths
  std::optional<std::string> reply;     // ShareGPT: the recorded answer to the last message
  std::string skip_reason;              // non-empty: the row is counted, not imported
  // Lone UTF-16 surrogate escapes replaced by U+FFFD in the row's JSON (its conversation's, for
  // the first row of a ShareGPT conversation): counted, never a reason to stop.
  std::uint64_t lone_surrogates = 0;
};

using RowSink = std::function<void(TraceRow&)>;

void read_mooncake(CompressedInput& input, const RowSink& sink);
void read_bailian(CompressedInput& input, const RowSink& sink);
void read_azure(CompressedInput& input, const RowSink& sink);
void read_burstgpt(CompressedInput& input, const RowSink& sink);
// At most `max_turns` user turns of each conversation become rows (turn k carries the k turns
// before it, so a conversation costs the square of its turns); `cut` counts the conversations that
// had more.
void read_sharegpt(CompressedInput& input, const RowSink& sink, std::size_t max_turns, std::uint64_t& cut);

// "YYYY-MM-DD HH:MM:SS[.F{1,9}][Z|+HH:MM|-HH:MM]" (a 'T' may stand for the space) as unix
// nanoseconds, UTC unless an offset is given. Azure's traces write seven fractional digits,
// which strptime's %f does not take. nullopt when the text is not such a time, or its year is outside
// 1970..2261 (int64 nanoseconds since 1970 end in 2262).
std::optional<std::int64_t> parse_date_time_ns(std::string_view text);

// "FILE:LINE: " for errors about the line `input` returned last.
std::string where(const CompressedInput& input);

}  // namespace retrace::rows
