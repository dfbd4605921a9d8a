// Internal to llm/: the decoder's fast path for the common streamed OpenAI event, a text delta and
// maybe a finish reason, e.g.
//   {"id":..,"object":"text_completion",..,"choices":[{"index":0,"text":" the","logprobs":null,
//    "finish_reason":null}]}
// A SAX pass (no DOM, no allocation once warm) picks out exactly what read_openai() would use.
// Its "logprobs" (both OpenAI shapes) are read by fast_logprobs.hpp's reader, and vLLM's per-choice
// "token_ids" and the "usage" counts here. A whole (non-streamed) answer takes the same path.
// Anything it does not model with certainty (errors, tool calls, reasoning, duplicate keys, odd
// index values, llama.cpp's logprobs spellings, ...) makes it give up, and the event goes through
// the general DOM path instead, so the decoded result is the same either way (a test compares the
// two paths event by event and body by body).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/parse_options.hpp>

#include "llm/fast_logprobs.hpp"

namespace retrace::llm {

// The options of every parse the decoder makes (the DOM path's and the fast path's).
inline boost::json::parse_options decoder_parse_options() {
  boost::json::parse_options options;
  options.allow_invalid_utf8 = true;  // token bytes are recorded as given, not judged
  options.max_depth = 64;
  return options;
}

struct SimpleMessage {
  bool is_object = false;  // "delta"/"message" present as an object
  bool has_content = false;
  EventText content;
  // Flags only: content is read where has_content says, and keeps its storage for the next event
  // (assigning a fresh SimpleMessage gave it up every event).
  void reset() { is_object = has_content = false; }
};

struct SimpleChoice {
  std::int64_t index = 0;
  bool has_text = false;
  EventText text;
  bool has_finish_reason = false;
  std::string finish_reason;
  SimpleMessage delta, message;
  SimpleLogprobs logprobs;  // when "logprobs" is an object
  bool has_token_ids = false;  // "token_ids" is an array: token_id_of() of each element
  std::vector<std::int32_t> token_ids;
  std::uint32_t seen = 0;  // bit per key already seen, to give up on duplicates
};

// The event's "usage" object, as read_usage() reads it: each count an integer (integer_of's rule)
// or absent; "reasoning_tokens" from "completion_tokens_details" when that is an object, else
// from the top (SGLang).
struct SimpleUsage {
  bool present = false;          // "usage" is an object
  bool details_present = false;  // "completion_tokens_details" is an object
  std::optional<std::int64_t> prompt_tokens, completion_tokens, total_tokens, reasoning_tokens_top,
      reasoning_tokens_details;
};

// One per decoder, reused for every event (Boost.JSON's basic_parser is instantiated only in
// fast_event.cpp). Each event goes first through ShapeReader (fast_scan_shape.hpp), which reads the
// shape streams repeat straight into the choices; then, where it gives up, through JsonScanner
// (fast_scan.hpp), which feeds the handler the same events basic_parser would in one pass over the
// bytes; and through basic_parser wherever the scanner stops. `scan` false runs basic_parser
// alone (the tests compare the two).
class FastEventParser {
 public:
  explicit FastEventParser(const boost::json::parse_options& options, bool scan = true);
  ~FastEventParser();
  FastEventParser(const FastEventParser&) = delete;
  FastEventParser& operator=(const FastEventParser&) = delete;

  // The choices of `data` in order when it is an event of the simple shape: an object with a
  // "choices" array. nullopt when it is not, and the general path must read it. The span lives
  // until the next parse(), and its strings (EventText) while `data` does.
  std::optional<std::span<const SimpleChoice>> parse(std::string_view data);
  // The last successful parse's "usage".
  const SimpleUsage& usage() const;
  // Logprob values checked but not converted (DecodeWants::logprob_values false): ShapeReader
  // gives them as 0, and gives up on exactly the same bytes as when it converts them.
  void skip_logprob_values(bool skip);
  // Events the scanner read to the end (the rest went through basic_parser), and of those, the
  // ones ShapeReader read alone (fast_scan_shape.hpp).
  std::size_t scanned() const;
  std::size_t shaped() const;

 private:
  struct Parser;
  std::unique_ptr<Parser> parser_;
};

}  // namespace retrace::llm
