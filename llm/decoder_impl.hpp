// Internal to llm/: the state of a ResponseDecoder and the steps that fill it, shared by the files
// that implement them:
//   decoder.cpp        the public ResponseDecoder, choices, notes, and dispatch by dialect
//   fast_event.cpp     the SAX fast path for the common streamed OpenAI event
//   fast_logprobs.cpp  the fast path's reader of streamed logprobs, and the tokens made of them
//   tokens.cpp         one event's tokens: from logprobs and id arrays, and the bytes of each
//   decode_openai.cpp  OpenAI completions and chat
//   decode_responses.cpp  OpenAI's Responses API (/v1/responses)
//   decode_messages.cpp   Anthropic's Messages API (/v1/messages)
//   decode_embeddings.cpp /v1/embeddings
//   decode_native.cpp  llama.cpp's native /completion and TGI
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/parse_options.hpp>
#include <boost/json/parser.hpp>
#include <boost/json/value.hpp>

#include "llm/fast_event.hpp"
#include "llm/fast_logprobs.hpp"
#include "base/json_arena.hpp"
#include "base/json_fields.hpp"
#include "format/parts.hpp"
#include "llm/llm.hpp"

namespace retrace::llm {

namespace json = boost::json;

// The one bound on a response's outputs (format/parts.hpp): a choice "index", an output position
// (Responses items, Messages blocks), a tool call's or an embedding's index, and the number of
// parts made of them all stay below kMaxParts. A larger index is corrupt data, not an output; a
// part past the count is dropped with one note (part_of). Each part is found in O(1), so one
// answer of 10^6 parts (a 3 MB embeddings list, 10^5 tool calls) costs its bytes, never N^2/2
// compares.
inline bool within_parts(std::optional<std::int64_t> index) {
  return index && *index >= 0 && *index < static_cast<std::int64_t>(kMaxParts);
}
constexpr std::size_t kMaxNotes = 8;
constexpr std::size_t kScratchBytes = 16 * 1024;

// Where a token's bytes came from, to decide how far to trust them against the text delta.
enum class BytesFrom : std::uint8_t { bytes_array, token_text, unknown };

// A token id from JSON; -1 (no id) when it is not an integer in 0..INT32_MAX.
std::int32_t token_id_of(const json::value& value);
// The same for an integer already read (integer_of()), or nullopt for a value that is not one.
inline std::int32_t token_id_of(std::optional<std::int64_t> integer) {
  return integer && *integer >= 0 && *integer <= INT32_MAX ? static_cast<std::int32_t>(*integer) : -1;
}
// Two of a server's token counts added (a total it did not send), saturated: the counts are
// outside input, and a signed overflow is undefined behaviour.
inline std::int64_t sum_of_counts(std::int64_t a, std::int64_t b) {
  std::int64_t sum;
  if (!__builtin_add_overflow(a, b, &sum)) return sum;
  return a > 0 ? INT64_MAX : INT64_MIN;
}
// Doubles from the wire clamped into float range (an out-of-range cast is undefined behaviour).
float to_float(double value);
// "logprob", or the log of "prob" (llama.cpp's probability spellings).
std::optional<float> logprob_of(const json::object& object);
// vLLM's return_tokens_as_token_ids spelling of a token, "token_id:123", as the id. Every token
// text and label of a stream is asked, and most are plain text: those are told apart here, inline,
// by their first byte, and only a text that may be a spelling reaches the parse (tokens.cpp).
std::optional<std::int32_t> parse_token_id_spelling(std::string_view text);
inline std::optional<std::int32_t> parse_token_id_string(std::string_view text) {
  if (text.size() <= 9 || text[0] != 't') return std::nullopt;  // 9: "token_id:"
  return parse_token_id_spelling(text);
}
// "bytes:\xe5\x85" (tiktoken's spelling of a piece of a UTF-8 character) as the bytes it names.
std::optional<std::string> parse_bytes_spelling(std::string_view text);
inline std::optional<std::string> parse_bytes_label(std::string_view text) {
  if (text.size() <= 6 || text[0] != 'b') return std::nullopt;  // 6: "bytes:"
  return parse_bytes_spelling(text);
}

// What the decoding of one response collects. Kept apart from the parser and the buffers below so
// that ResponseDecoder::reset() starts the next response from a fresh one of these, whatever
// fields it gains, while the buffers stay warm.
struct DecodeState {
  explicit DecodeState(Dialect d) : dialect(d) {}
  Dialect dialect;
  bool sniffed = false;  // dialect was unknown and got guessed from the response
  bool finished = false;
  std::size_t events_seen = 0;
  std::size_t events_after_end = 0;
  std::vector<Choice> choices;
  // Where each part is in `choices` (until finish() sorts them), and whether its call's id is in
  // tool_call_ids: the O(1) lookup part_of makes.
  struct PartKey {
    std::uint32_t index;
    Part part;
    std::uint32_t call;
    bool operator==(const PartKey&) const = default;
  };
  struct PartKeyHash {
    std::size_t operator()(const PartKey& key) const noexcept {
      return std::hash<std::uint64_t>{}((std::uint64_t(key.index) << 40) ^ (std::uint64_t(key.part) << 32) ^ key.call);
    }
  };
  struct PartSlot {
    std::uint32_t position;
    bool id_recorded = false;
  };
  std::unordered_map<PartKey, PartSlot, PartKeyHash> part_slots;
  // The part part_of last found or made, which the next event nearly always names again (a stream
  // of one choice): told by one compare before the hash lookup. Valid as long as part_slots is.
  // The index kMaxParts is no part's.
  PartKey last_part{static_cast<std::uint32_t>(kMaxParts), Part{}, 0};
  std::uint32_t last_part_position = 0;
  // What part_of hands out once kMaxParts parts exist: emptied every time, so what is written
  // into it is dropped and costs one event's worth at most.
  Choice dropped_part;
  std::size_t parts_dropped = 0;  // part_of calls refused, for the note
  Usage usage;
  // Responses and Messages: what each output item / content block is, by its position in the
  // stream (output_index, content block index), so its deltas reach the right part.
  struct Item {
    Part part = Part::content;
    std::uint32_t call = 0;
  };
  std::vector<std::optional<Item>> items;
  std::uint32_t tool_calls = 0;  // calls seen so far (the next call's position)
  std::vector<ToolCallId> tool_call_ids;  // ResponseDecoder::tool_call_ids()
  std::vector<std::string> notes;
  std::size_t notes_dropped = 0;
  // The first server error the response carried ("event 3: CUDA out of memory"): finish() makes
  // it the exchange's ErrorKind::server_error.
  std::optional<std::string> server_error;
  bool noted_split_unknown = false;
  bool noted_text_mismatch = false;
  bool fast_path = true;        // off for the rest of a response after kFastPathMisses
  std::size_t fast_misses = 0;  // in a row
  std::size_t fast_events = 0;  // decoded by the fast path
};

struct ResponseDecoder::Impl : DecodeState {
  // Parsing: one parser and one arena reused for every event (they are many and small); the
  // arena's rule (a fresh resource per parse) is base/json_arena.hpp's.
  JsonArena arena{kScratchBytes};
  json::parser parser{json::storage_ptr(), make_options()};
  bool fast_path_allowed = true;  // as constructed; reset() starts each response from it
  FastEventParser fast_parser{make_options()};
  // A stream's events share one shape: after this many in a row that the fast path gave up on
  // (token ids, usage), the rest go straight to the DOM path instead of being parsed twice.
  static constexpr std::size_t kFastPathMisses = 3;

  // Per-event scratch, reused.
  std::vector<BytesFrom> bytes_from;
  std::vector<std::int64_t> text_offsets_scratch;
  std::vector<std::int32_t> token_ids_scratch;

  static json::parse_options make_options() { return decoder_parse_options(); }

  // What the reader needs (format/trace.hpp): without alternatives, the fast path does not build
  // them (read_simple_logprobs) and finish() drops what the general path built.
  DecodeWants wants;

  Impl(Dialect d, bool allow_fast_path, DecodeWants w)
      : DecodeState(d), fast_path_allowed(allow_fast_path) {
    fast_path = allow_fast_path;
    set_wants(w);
  }
  void set_wants(DecodeWants w) {
    wants = w;
    fast_parser.skip_logprob_values(!w.logprob_values);
  }
  void reset(Dialect d, DecodeWants w) {
    static_cast<DecodeState&>(*this) = DecodeState(d);
    set_wants(w);
    fast_path = fast_path_allowed;
    bytes_from.clear();
    text_offsets_scratch.clear();
    token_ids_scratch.clear();
  }

  // decoder.cpp: notes, choices, parsing and dispatch.
  void note(std::string message);
  std::string where() const { return "event " + std::to_string(events_seen - 1); }
  // Parses `text` into the arena; nullopt (and a note naming `what`) when it is not JSON.
  std::optional<json::value> parse(std::string_view text, const std::string& what);
  // The object's "index" into `index` (left as it is when absent or null); false, noted naming
  // `what` ("choice", "embedding"), when it is out of range (within_parts).
  bool read_index(const json::object& object, std::string_view what, std::uint32_t& index);
  // The choice named by the object's "index" (0 when absent), or nullptr (noted) when invalid.
  Choice* choice_at(const json::object& object);
  Choice& choice_with_index(std::uint32_t index) { return part_of(index, Part::content); }
  // The stream of one part of choice `index` (made on first use). A reference into `choices`:
  // valid until the next part_of or choice_at makes one.
  // Past kMaxParts parts, a scratch part that is dropped (noted once): callers write into it as
  // into any other.
  Choice& part_of(std::uint32_t index, Part part, std::uint32_t call = 0);
  bool read_error(const json::object& object);
  void sniff(const json::object& root, bool streamed);
  void read(const json::value& value, std::int64_t offset_ns, bool streamed);
  void read_object(const json::object& root, std::int64_t offset_ns, bool streamed);

  // fast_event.cpp: a streamed event of the simple shape, decoded without a DOM; false when it
  // is not one, having changed nothing.
  bool read_simple_event(std::string_view data, std::int64_t offset_ns, bool streamed);
  void read_simple_usage(const SimpleUsage& read);
  // fast_logprobs.cpp: the tokens of one choice's logprobs as the fast path read them (as
  // read_tokens() makes them from the DOM); the text offsets to split the delta by, or nullptr.
  const std::vector<std::int64_t>* read_simple_logprobs(Choice& choice, const SimpleLogprobs& logprobs,
                                                        std::int64_t offset_ns);

  // tokens.cpp. The tokens appended from `first` on belong to one event (or body) whose text is
  // `delta` (nullopt: the server sent none to compare with).
  Token& add_token(Choice& choice, std::int64_t offset_ns, BytesFrom from) {
    Token& token = choice.tokens.emplace_back();
    token.offset_ns = offset_ns;
    // Where its alternatives start even when it has none, as format/wire.cpp reads it back.
    token.top_begin = static_cast<std::uint32_t>(choice.alternatives.size());
    bytes_from.push_back(from);
    return token;
  }
  // One event's (or body's) worth of tokens for one choice: logprobs first, then id arrays,
  // then the text itself as one delta token.
  void read_tokens(Choice& choice, std::optional<std::string_view> text, const json::value* logprobs,
                   const json::array* ids, std::int64_t offset_ns);
  void read_content_logprobs(Choice& choice, const json::array& entries, std::int64_t offset_ns);
  void read_legacy_logprobs(Choice& choice, const json::object& logprobs, std::int64_t offset_ns);
  void apply_id_array(Choice& choice, std::size_t first, const json::array& ids, std::int64_t offset_ns);
  void apply_id_array(Choice& choice, std::size_t first, std::span<const std::int32_t> ids, std::int64_t offset_ns);
  const std::vector<std::int64_t>* integer_offsets(const json::array* offsets);
  void settle_bytes(Choice& choice, std::size_t first, std::optional<std::string_view> delta,
                    const std::vector<std::int64_t>* text_offsets);
  bool split_by_offsets(Choice& choice, std::size_t first, std::size_t count, std::string_view delta,
                        const std::vector<std::int64_t>* text_offsets);
  static BytesFrom set_token_text(Token& token, std::string_view text);
  static void set_label_alternative(Alternative& alternative, std::string_view label, double logprob);
  static void sort_best_first(std::span<Alternative> top);

  // decode_openai.cpp
  void read_openai(const json::object& root, std::int64_t offset_ns, bool streamed);
  void read_usage(const json::object& object);
  void read_chat_parts(std::uint32_t index, const json::object& message, const json::value* logprobs,
                       const json::array* ids, std::int64_t offset_ns);
  void read_tokens_across_parts(std::uint32_t index, const std::vector<std::pair<Part, std::string_view>>& texts,
                                const json::value* logprobs, const json::array* ids, std::int64_t offset_ns);
  void read_tool_call(std::uint32_t index, std::uint32_t call, std::optional<std::string_view> id,
                      std::optional<std::string_view> name,
                      std::optional<std::string_view> arguments, std::int64_t offset_ns);
  // A text delta into a part of choice 0 (the one-output APIs below).
  void add_text(Part part, std::uint32_t call, std::string_view text, std::int64_t offset_ns);
  // The item at stream position `position`, made a part (a new tool call takes the next call
  // position); nullptr when the position is out of range.
  const Item* item_at(std::optional<std::int64_t> position, std::optional<Part> made_as = std::nullopt);

  // decode_responses.cpp
  void read_responses(const json::object& root, std::int64_t offset_ns, bool streamed);
  void read_response_object(const json::object& response, std::int64_t offset_ns);
  void read_response_usage(const json::object& usage_object);

  // decode_messages.cpp
  void read_messages(const json::object& root, std::int64_t offset_ns, bool streamed);
  void read_message_content(const json::array& content, std::int64_t offset_ns);
  void read_message_usage(const json::object& usage_object);

  // decode_embeddings.cpp
  void read_embeddings(const json::object& root);

  // decode_native.cpp
  void read_llamacpp(const json::object& root, std::int64_t offset_ns);
  void read_tgi_stream(const json::object& root, std::int64_t offset_ns);
  void read_tgi_body(const json::object& root, std::uint32_t index, std::int64_t offset_ns);
  Token& read_tgi_token(Choice& choice, const json::object& token_object, std::int64_t offset_ns);
  void read_tgi_alternatives(Choice& choice, Token& token, const json::array& top);
  void read_tgi_details(Choice& choice, const json::object& details);
};

}  // namespace retrace::llm
