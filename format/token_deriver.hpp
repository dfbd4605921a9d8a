// Format 1.7: a streamed exchange's tokens derived from its stored events, not stored beside them.
//
// The events (the SSE bytes as they arrived, with their arrival offsets) are what retrace exists
// to keep; the token streams the decoder made of them (~105 bytes a token with two alternatives,
// a fifth of what a streamed token costs on disk) are a function of them. So the writer stores a
// flag instead of the tokens where that function gives them back exactly, and the reader runs the
// function again. The function is the decoder's (llm/, floor 3), and format/ (floor 2) may not
// include llm/: format/ declares the slot here and the top floors fill it once at start (cli's
// main, the Python module, the unit tests' main, benches and fuzz targets:
// llm::install_token_deriver()), so derivation and live decoding are one function and cannot drift.
//
// The trade-off (bench/RESULTS.md, issue 44 items 1 and 5): the file ~40 % smaller and, where
// record or replay decoded the events themselves (TokensFromEvents below), 13-20 % less CPU a token
// to write than storing the tokens (verifying by a second decode cost +17-21 %); but every reader
// decodes again (stats 1.7-2x, diff 2-2.6x the CPU), and a 1.6 reader shows a derived exchange
// with no tokens. So derivation is asked for, not the default.
// Writing (only with WriterOptions::derive_tokens, off by default: `record --derive-tokens`,
// `replay --derive-tokens`): TraceWriter derives each streamed exchange's choices from its events
// with the installed deriver (unless its producer gave its word: TokensFromEvents) and sets the
// flag only when the result equals the exchange's choices, token for token
// (ids, bytes, logprobs, offsets, alternatives, kinds, finish reasons); anything else (ids sent
// out of band, a stream cut or redacted after decoding, a body too large to keep its events, no
// deriver installed) keeps its tokens stored as in 1.6. Correctness never depends on the server.
//
// Reading: an exchange with the flag gets its choices from the deriver. Reading one with no
// deriver installed throws NoTokenDeriver (never empty tokens). The count of each choice's tokens
// is stored (Choice.tokenCount) so a reader that wants counts but no tokens need not derive.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "format/trace.hpp"

namespace retrace {

// One stored event as the deriver reads it: its arrival and a view of its bytes, in an Exchange's
// events or in a record itself (a reader that wants only outputs copies no event: read_outputs).
struct EventView {
  std::int64_t offset_ns = 0;
  std::string_view data;
};

// Makes an exchange's choices (choices, token kinds, finish reasons, parts) from its dialect
// (Exchange::dialect) and its response's events alone, as the live decoder made them: `choices`
// is overwritten. `wants` (trace.hpp): what the reader needs of them (the writer's test: all).
using TokenDeriver = void (*)(std::string_view dialect, const std::vector<EventView>& events,
                              std::vector<Choice>& choices, DecodeWants wants);

// Installs the process's deriver (llm::install_token_deriver does); null uninstalls, and the
// writer then stores every token as 1.6 did (benchmarks and tests compare the two that way).
void install_token_deriver(TokenDeriver deriver);
TokenDeriver installed_token_deriver();

// Thrown by the reader for a derived exchange when no deriver is installed: a program error (a
// main that reads traces without llm::install_token_deriver()), not a damaged record.
class NoTokenDeriver : public TraceError {
 public:
  using TraceError::TraceError;
};

// The producer's word: `exchange`'s choices are what the deriver's own loop made of exactly its
// stored events (feed_sse of each event into a ResponseDecoder of exchange.dialect, then finish):
// record's trace thread (record::finish_exchange says when), replay's worker. While this lives,
// the writer writing this very object on this thread takes it as derivable without decoding
// its events again (the +17 % of the trace thread, bench/RESULTS.md). A writer argument, carried by
// a scope rather than by TraceWriter::write's signature or a field of Exchange so that neither
// trace.hpp nor every room changes, and tied to one call on one object so that no copy, edit or
// later write can carry it stale. Say it only when sure: anything that can make the tokens differ
// from a re-derivation (ids sent out of band, events trimmed, stored as received or edited after
// decoding, a decoder that changed dialect) must not; unsaid, the writer verifies as before.
// `live`: what the producer's decode kept (format/trace.hpp's DecodeWants). The writer stores of
// the choices only what every wants keeps (their shape and token counts), so a word is true when
// the full derivation, cut to `live`, equals the choices; the check compares exactly that.
class TokensFromEvents {
 public:
  TokensFromEvents(const Exchange& exchange, bool said, DecodeWants live = {});
  ~TokensFromEvents();
  TokensFromEvents(const TokensFromEvents&) = delete;
  TokensFromEvents& operator=(const TokensFromEvents&) = delete;

 private:
  const Exchange* previous_;
  DecodeWants previous_wants_;
};

// `writer.write(exchange)` (a TraceWriter, or what wraps one: record's TraceOutput) with `said` as
// the producer's word, its decode having kept `live`.
template <typename Writer>
void write_with_word(Writer& writer, const Exchange& exchange, bool said, DecodeWants live = {}) {
  TokensFromEvents word(exchange, said, live);
  writer.write(exchange);
}

// Whether `exchange` (its response's events not yet made: `event_bytes` of them to come) will surely
// be written whole by a writer with `options`: its bodies and events kept, as a record within
// max_frame_bytes even at one event a byte. Else TraceWriter::write keeps its tokens without the
// events, as its producer decoded them: so a producer decodes lean (kNoLogprobValues) only when so.
bool written_whole(const Exchange& exchange, std::size_t event_bytes, const WriterOptions& options);

// When on, the writer derives a said exchange anyway and throws std::logic_error if the word was
// wrong (its tokens are not what its events give, cut to what its decode kept): on in debug builds (no NDEBUG) and in the unit
// tests (tests/catch_main.cpp), off in release, where the word saves the decode.
void check_tokens_from_events(bool on);

// True when `exchange` may be written with its tokens derived: it is streamed, has events and
// tokens, a deriver is installed, and deriving gives back its choices exactly, or its producer
// said so (TokensFromEvents). `scratch` is the deriver's output (reused across calls).
bool tokens_derivable(const Exchange& exchange, std::vector<Choice>& scratch);

// The reader's side: `exchange` (its id, dialect and events read; its choices as stored: every
// field but tokens, whose counts are `token_counts`, one per choice) gets its choices from the
// deriver. A result whose shape differs from what was stored (a later decoder that reads the same
// events otherwise) is kept, and decode_note says so. Throws NoTokenDeriver when none is installed.
void derive_tokens(Exchange& exchange, const std::vector<std::uint32_t>& token_counts, DecodeWants wants = {});
// The same for a reader that wants the choices only (ExchangeOutputs, which has no decode_note):
// exchange `id`'s choices from `dialect` and `events` into `choices`, with no shape check.
void derive_choices_of(std::uint64_t id, std::string_view dialect, const std::vector<EventView>& events,
                       std::vector<Choice>& choices, DecodeWants wants = {});

}  // namespace retrace
