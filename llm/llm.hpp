// Wire dialects of LLM inference servers: SSE framing, and turning a response (streamed or not)
// into token streams per choice. The recorder and the replayer both feed responses through this
// one decoder, so a replayed exchange is recorded exactly as a recorded one.
//
// Dialects: OpenAI completions and chat (text deltas; logprob tokens; vLLM's
// `return_tokens_as_token_ids` "token_id:N" strings; vLLM's `return_token_ids` arrays),
// llama.cpp's native /completion, TGI's /generate and /generate_stream, OpenAI's Responses API,
// Anthropic's Messages API, and embeddings. Every output is split into its parts (reasoning,
// content, refusal, each tool call, embeddings: format/trace.hpp). Unknown shapes are kept raw by
// the caller and flagged through Exchange::decode_note, never dropped.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/fwd.hpp>

#include "format/trace.hpp"

namespace retrace {
enum class JsonEdit : std::uint8_t;  // base/json_edit.hpp: what an edit did to a parsed body
}

namespace retrace::llm {

// Incremental SSE framing (https://html.spec.whatwg.org/multipage/server-sent-events.html):
// feed bytes as they arrive, get each complete event once its blank line arrives. Handles \n,
// \r\n and \r line ends, split anywhere, comments, multi-line data, a leading UTF-8 BOM.
//
// Every byte fed ends up in exactly one event's `raw` or in take_partial(), in order, so the
// raws concatenated with the partial tail are the input byte for byte. A blank line always ends
// an event, even one holding only comments (a keep-alive ": ping") or nothing at all, so that
// its bytes are accounted for; such events have empty `data`. A \r ends its line at once (no
// waiting for a possible \n, which would stall a live stream); a \n that then follows it is
// part of that line end but, arriving later, lands at the start of the next event's raw.
// Cost is linear in the input: each byte is scanned once, however the stream is split.
struct SseEvent {
  std::string_view raw;    // the event's bytes as received, including its terminating blank line
  std::string_view data;   // data lines joined with '\n'
  std::string_view event;  // the "event:" field, "" when absent
};

class SseParser {
 public:
  using Handler = std::function<void(const SseEvent&)>;
  // Calls `on_event` for each event completed by `bytes`. The event's views live until
  // `on_event` returns (they may point into `bytes`).
  void feed(std::string_view bytes, const Handler& on_event);
  // Bytes of an unterminated last event (a stream cut mid-event), and clears them.
  std::string take_partial();
  bool has_partial() const;

 private:
  void frame_in_place(std::string_view bytes, const Handler& on_event);
  void scan(const char* base, std::size_t size, const Handler& on_event);
  void dispatch(std::string_view raw, const Handler& on_event);
  void process_line(std::string_view line);
  void keep_data_line();  // first_data_ copied into data_ before the bytes it views go away

  std::string buffer_;           // an event begun in an earlier feed, from event_start_ on
  std::string data_;             // data lines so far, each followed by '\n'
  std::string_view first_data_;  // the event's one data line so far, in place (data_in_place_)
  bool data_in_place_ = false;
  std::string event_;
  std::size_t scan_from_ = 0;    // next byte to look at for a line end (of buffer_ between feeds)
  std::size_t event_start_ = 0;  // first byte of the event being assembled
  std::size_t line_start_ = 0;   // first byte of the line being assembled
  bool bom_checked_ = false;     // the stream's first bytes were checked for a UTF-8 BOM
  bool skip_lf_ = false;         // the previous line ended in \r: a \n next belongs to it
};

enum class Dialect : std::uint8_t {
  unknown,
  openai_completions,  // POST /v1/completions (vLLM, SGLang, llama.cpp, OpenAI)
  openai_chat,         // POST /v1/chat/completions
  llamacpp_completion, // POST /completion (llama.cpp native)
  tgi_generate,        // POST /generate, /generate_stream (TGI)
  openai_responses,    // POST /v1/responses (OpenAI's Responses API; vLLM, SGLang)
  anthropic_messages,  // POST /v1/messages (Anthropic's Messages API; vLLM, SGLang)
  openai_embeddings,   // POST /v1/embeddings: vectors, compared numerically
};

std::string_view to_string(Dialect);
// From the request's path (query ignored) and, where the path is ambiguous, its body: as bytes
// (parsed only then), or as already parsed.
Dialect detect_dialect(std::string_view target, std::string_view request_body);
Dialect detect_dialect_of_parsed(std::string_view target, const boost::json::value& request_body);
// Whether a request body of `dialect` names its model in a top-level "model" field (the OpenAI
// and Anthropic shapes: completions, chat, responses, messages, embeddings): what replay's model
// substitution and the preflight's model check read and write.
bool names_model(Dialect dialect);
// An inference request (a known generation dialect, or embeddings, rerank, score, responses), as
// opposed to a model listing, a health check or a metrics scrape: what `stats` counts as requests.
bool is_inference_request(std::string_view target, std::string_view request_body);

// Decodes one response. Feed it either SSE events (stream) or the whole body (non-stream), then
// call finish() to write choices, usage, token kinds, dialect and decode_note into an Exchange.
// Tolerant: a malformed event is noted in decode_note and skipped; what decoded is kept.
// A tool call's id: choice `index`, its position `call` among the choice's calls (Choice::tool_call).
struct ToolCallId {
  std::uint32_t index = 0;
  std::uint32_t call = 0;
  std::string id;
};

class ResponseDecoder {
 public:
  explicit ResponseDecoder(Dialect dialect);
  // fast_path false sends every event through the general (DOM) parse; the result is the same
  // (tests compare the two), only slower. The default decodes the common simple event shape (a
  // text delta, a finish reason) with a SAX pass and falls back to the general parse otherwise.
  ResponseDecoder(Dialect dialect, bool fast_path);
  // `wants` (format/trace.hpp): what of the tokens the reader needs; the default is everything.
  ResponseDecoder(Dialect dialect, bool fast_path, DecodeWants wants);
  ~ResponseDecoder();
  ResponseDecoder(ResponseDecoder&&) noexcept;
  ResponseDecoder& operator=(ResponseDecoder&&) noexcept;
  // Starts a new response in `dialect`, as a newly made decoder would, keeping the parser and its
  // buffers (a decoder's set-up allocates ~20 KiB: replay reuses one per exchange in flight).
  void reset(Dialect dialect, DecodeWants wants = {});
  // What of the tokens to keep, chosen before the response's first event (replay decides once
  // the whole body is in: kNoLogprobValues when the trace derives them).
  void set_wants(DecodeWants wants);

  // One SSE event's data (e.g. `{"choices":...}` or `[DONE]`), arrived at `offset_ns`.
  void on_event(std::string_view data, std::int64_t offset_ns);
  // A complete non-streamed body, arrived (fully) at `offset_ns`.
  void on_body(std::string_view body, std::int64_t offset_ns);
  // The stream said it is complete ([DONE], llama.cpp "stop": true, TGI final event).
  bool finished() const;
  // Writes choices (sorted by index), usage, dialect and decode_note into `out`. When `out` has
  // no error yet and a 2xx status, also its failure after the header: ErrorKind::server_error for
  // an error the server wrote into the body or stream (vLLM's and SGLang's `data: {"error":
  // {...}}`, `{"object": "error"}`), ErrorKind::truncated for a stream (out.response.streamed)
  // that ended without its end marker while a choice had no finish reason.
  void finish(Exchange& out);
  // How many events the SAX fast path decoded (the rest went through the general parse): for
  // tests that must know the fast path was taken, and for benchmarks.
  std::size_t fast_path_events() const;
  // The id the server gave each tool call of the response so far (chat "tool_calls[].id",
  // Responses "call_id", Messages tool_use "id"), in the order first seen. Not part of the
  // Exchange (ids are not compared): live sessions map the recorded ids to these.
  const std::vector<ToolCallId>& tool_call_ids() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The one loop from SSE bytes to a decoder, for the recorder, the replayer and decode_exchange:
// frames `bytes` (arrived at `offset_ns`) with `parser`; each event it completes is kept raw in
// `events` and its data passed to `decoder`, either left out when null. Every event reaches the
// decoder, keep-alives and empty ones too, so that the decoder's "event N" notes count as
// `events` does. Returns how many events `bytes` completed.
std::size_t feed_sse(SseParser& parser, std::string_view bytes, std::int64_t offset_ns, ResponseDecoder* decoder,
                     Events* events);
// A stream cut mid-event: keeps the unterminated tail raw as a last event at `offset_ns`, so that
// the events still add up to the body byte for byte. Does nothing when there is no tail.
void keep_partial_event(SseParser& parser, std::int64_t offset_ns, Events& events);

// Convenience: decode a stored response (events or body) of `exchange` from scratch, filling its
// choices/usage/dialect/decode_note. Used by import and tests.
void decode_exchange(Exchange& exchange);

// Concatenated bytes of a choice's tokens.
std::string choice_text(const Choice& choice);

// Request side: add the fields that make a server return token ids (replay --token-ids).
//   logprobs  standard fields only: completions `logprobs: 2`; chat `logprobs: true,
//             top_logprobs: 2` (llama.cpp answers these with ids; OpenAI with bytes).
//   vllm      the logprobs fields plus `return_tokens_as_token_ids: true` (vLLM writes tokens
//             inside logprobs as "token_id:N", so it needs logprobs on) and `return_token_ids:
//             true` (plain id arrays, vLLM >= 0.10.2).
//   llamacpp  on /v1 endpoints the logprobs fields; natively `return_tokens: true, n_probs: 2`.
// Native dialects get their own fields in every mode but off (llama.cpp native: return_tokens
// and n_probs; TGI: `details: true, top_n_tokens: 2`), as they have no other way to give ids.
// Two alternatives, so the margin to the runner-up is known at every token. Values the client
// already set and that suffice (e.g. `logprobs: 5`) are kept.
enum class TokenIdMode : std::uint8_t { off, vllm, llamacpp, logprobs };
BOOST_DESCRIBE_ENUM(TokenIdMode, off, vllm, llamacpp, logprobs)
// "off" (or "none"), "vllm", "llamacpp" (or "llama.cpp"), "logprobs"; nullopt otherwise.
std::optional<TokenIdMode> token_id_mode_from_string(std::string_view);
// The mode's name as token_id_mode_from_string reads it ("off", "vllm", "llamacpp", "logprobs").
std::string_view to_string(TokenIdMode);
// Rewrites a JSON request body for `dialect`; returns it unchanged when not a JSON object, the
// dialect is unknown or mode is off. New fields are appended before the closing brace, leaving
// the client's bytes as they were; only when an existing value must change is the body
// re-serialized (base/json_edit.hpp's rule). The object overload makes the same edit on a body
// already parsed and says what it did; the bytes overload is it with one parse and one write.
std::string add_token_id_fields(std::string_view body, Dialect dialect, TokenIdMode mode);
JsonEdit add_token_id_fields(boost::json::object& body, Dialect dialect, TokenIdMode mode);

// Replay streams OpenAI completions and chat by default, so TTFT and inter-token latency exist,
// and asks for the server's usage in the stream (`stream_options: {include_usage: true}`) so the
// output token count is the server's. stream = false (--no-stream) sets `stream: false` and drops
// stream_options. Other dialects and bodies that are not JSON objects are returned unchanged, as
// is a body that already says what is wanted; otherwise the fields are appended when they are
// new and the body re-serialised (key order kept) when one was there (base/json_edit.hpp's rule).
// The object overload as add_token_id_fields's.
std::string set_streaming(std::string_view body, Dialect dialect, bool stream);
JsonEdit set_streaming(boost::json::object& body, Dialect dialect, bool stream);

}  // namespace retrace::llm
