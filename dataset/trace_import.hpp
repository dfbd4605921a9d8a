// Importing the public LLM-serving traces: `retrace import --from mooncake|bailian|azure|
// burstgpt|sharegpt` (and telling them, jsonl and openai-batch apart by the first line).
//
// Every row becomes one request exchange (no response) with:
//   intended_send_ns = actual_send_ns = the row's time from the trace's first row, so that
//     `replay --timing recorded [--speed X]` reproduces the arrival process, bursts included;
//   start_unix_ns = the row's wall-clock time where the trace has one (Azure), else 0;
//   session_id = the conversation (Bailian's root chat, BurstGPT's Session ID, ShareGPT's id),
//     so that `replay --sessions` runs a conversation's turns in order;
//   a body {"messages": [...]} (chat) or {"prompt": ...} (completions) with "max_tokens" = the
//     recorded output length, "ignore_eos": true so the server does not stop early (a vLLM,
//     SGLang and llama.cpp extension a strict OpenAI endpoint may refuse; replay --unset
//     ignore_eos drops it) and "temperature": 0. No "model": replay names the target's.
// Length-only rows get synthetic prompts (dataset/synthetic_prompt.hpp). The header's settings say
// which format, how prompt lengths were made (approximate or exact against which tokenizer), and
// how many rows were skipped and why.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "dataset/synthetic_prompt.hpp"
#include "format/trace.hpp"

namespace retrace {

// The formats below, in the order --help lists them.
const std::vector<std::string_view>& trace_formats();
bool is_trace_format(std::string_view name);

// The format of `path` from the start of its first non-blank line (after decompression; at most
// the first 64 KiB are read, so a one-line file of gigabytes is not read whole): a trace format,
// "jsonl", "openai-batch" or "export". Throws TraceError naming the formats when none fits.
std::string detect_import_format(const std::filesystem::path& path);

// The most tokens a row may give a prompt or an answer: 1,048,576, the longest context window of
// today's models and `retrace serve --max-model-len`'s largest. A row past it is refused, naming
// its line, before a prompt of that length is built (10^12 claimed tokens would be terabytes).
inline constexpr std::int64_t kMaxImportTokens = std::int64_t{1} << 20;

inline constexpr std::size_t kDefaultMaxTurns = 256;

struct TraceImportOptions {
  std::string from;                // one of trace_formats()
  std::string endpoint = "chat";   // chat | completions
  std::int64_t max_tokens = 128;   // a ShareGPT turn with no recorded answer
  // ShareGPT: the user turns of a conversation that become requests, the first ones. Turn k's
  // request carries the k turns before it, so time and trace size grow with the square of a
  // conversation's turns: a 20,000-turn conversation would be 200 million messages.
  std::size_t max_turns = kDefaultMaxTurns;
  std::string tool_version;
  TokenCounter count_tokens;       // empty: approximate lengths
  std::string tokenizer_url;       // recorded in the header when count_tokens is given
  WriterOptions writer;
};

struct TraceImportSummary {
  std::uint64_t written = 0;
  std::uint64_t skipped = 0;
  std::uint64_t sessions = 0;
  std::uint64_t inexact_prompts = 0;  // exact mode: prompts the tokenizer could not match
  std::uint64_t lone_surrogates = 0;  // lone UTF-16 surrogate escapes read as U+FFFD
  // Rows earlier than the row before them (still after the first row): each is sent at its own
  // offset, so the replay's order is not the file's. The first one's "FILE:LINE".
  std::uint64_t cut_conversations = 0;  // ShareGPT conversations with more turns than max_turns
  std::uint64_t out_of_order = 0;
  std::string first_out_of_order;
};

// Reads `in` (plain, .gz or .zst) and writes the trace `out` through `out`.tmp, renamed at the
// end, so a bad row leaves no output file. Throws TraceError "IN:LINE: what is wrong".
TraceImportSummary import_trace(const std::filesystem::path& in, const std::filesystem::path& out,
                                const TraceImportOptions& options);

}  // namespace retrace
