// retrace trace format: the data model every stage shares, and the .rtrace writer and reader.
// The bytes on disk (zstd frames of Cap'n Proto Records, an optional index in a skippable frame)
// are described once, in format/trace.capnp.
//
// Only format/ includes Cap'n Proto and zstd; everyone else sees these plain structs.
//
// The output types (tokens, choices, events) and the enums: format/exchange_types.hpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/json/fwd.hpp>

#include "base/clock.hpp"
#include "base/enum_names.hpp"
#include "format/exchange_types.hpp"
#include "format/metric_scrape.hpp"
#include "format/server_said.hpp"

namespace retrace {

inline constexpr std::uint16_t kFormatMajor = 1;
// 1.1: Exchange.retries; 1.2: ErrorKind.rejected; 1.3: ErrorKind.server_error, ErrorKind.truncated;
// 1.4: output parts (Choice.part, toolCall, toolName, values; Usage.reasoningTokens); 1.5: the
// /metrics series (MetricScrape records), Exchange.inFlightAtSend and inFlightMax; 1.6:
// Exchange.server (what the server said of it) and serverState (its series joined to it); 1.7:
// Exchange.tokensDerived and Choice.tokenCount (derived tokens: format/token_deriver.hpp)
inline constexpr std::uint16_t kFormatMinor = 7;

struct Label {
  std::string key;
  std::string value;
  bool operator==(const Label&) const = default;
};

struct HttpHeader {
  std::string name;
  std::string value;
  bool operator==(const HttpHeader&) const = default;
};

struct TraceHeader {
  std::uint16_t format_major = kFormatMajor;
  std::uint16_t format_minor = kFormatMinor;
  std::string tool_version;
  std::int64_t created_unix_ns = 0;
  Source source = Source::recorded;
  std::string target;       // upstream (record) / target (replay) URL; input file for imports
  std::string settings;     // JSON object: the settings that produced this trace
  std::string host;
  std::vector<Label> labels;
  std::string server_info;  // JSON: what the server said about itself
  bool operator==(const TraceHeader&) const = default;
};


struct Request {
  std::string method;
  std::string target;  // path and query
  std::vector<HttpHeader> headers;
  std::string body;
  bool operator==(const Request&) const = default;
};

struct Response {
  std::uint16_t status = 0;  // 0: no response (see error)
  std::vector<HttpHeader> headers;
  std::string body;  // the whole body when not streamed, decoded (docs/DESIGN.md)
  bool streamed = false;
  Events events;  // the bytes of a streamed response's events, one buffer (exchange_types.hpp)
  bool operator==(const Response&) const = default;
};

struct Usage {
  std::int64_t prompt_tokens = -1;
  std::int64_t completion_tokens = -1;
  std::int64_t total_tokens = -1;
  std::int64_t reasoning_tokens = -1;  // of completion_tokens, where the server says
  bool operator==(const Usage&) const = default;
};

struct Error {
  ErrorKind kind = ErrorKind::none;
  std::string message;
  bool operator==(const Error&) const = default;
};

struct RequestKey {
  std::uint64_t hi = 0;
  std::uint64_t lo = 0;
  bool operator==(const RequestKey&) const = default;
  auto operator<=>(const RequestKey&) const = default;
  std::string hex() const;  // 32 lowercase hex digits
};

struct Exchange {
  std::uint64_t id = 0;
  std::optional<std::uint64_t> source_id;
  RequestKey key;
  std::string session_id;
  std::int64_t start_unix_ns = 0;     // wall clock at the actual send
  std::int64_t intended_send_ns = 0;  // from the run's start
  std::int64_t actual_send_ns = 0;    // from the run's start
  std::int64_t first_byte_ns = -1;    // from the send; -1 when no byte arrived
  std::int64_t end_ns = -1;           // from the send
  Request request;
  Response response;
  std::vector<Choice> choices;
  Usage usage;
  Error error;
  std::vector<Label> labels;
  std::optional<std::string> expected;
  std::string dialect;      // wire dialect the response was decoded as; "" = unknown
  std::string decode_note;  // why decoding was partial or impossible; "" when clean
  // Times the request was sent again on a fresh connection because a reused keep-alive connection
  // closed before any byte of the response (0 or 1).
  std::uint8_t retries = 0;
  // Replay's client: requests in flight when it was sent and the most while it ran, itself
  // included; -1 when not known (recorded, imported, written before 1.5).
  std::int32_t in_flight_at_send = -1, in_flight_max = -1;
  ServerSaid server;         // (1.6) format/server_said.hpp
  ServerState server_state;  // (1.6) replay's join to the run's /metrics series
  bool operator==(const Exchange&) const = default;

  // The value of a label, or nullptr.
  const std::string* label(std::string_view key) const;
};

// What diff's summaries read of an exchange, and nothing else: its ids, key, error, expected
// answer, dialect, request method and target, and each choice's output (each part of it) as one
// string (every token's bytes, concatenated) with its token ids. No request body, response,
// labels, per-token strings, logprobs or alternatives.
struct ChoiceOutput {
  std::uint32_t index = 0;
  Part part = Part::content;
  std::uint32_t tool_call = 0;
  std::string tool_name;
  TokenKind kind = TokenKind::none;
  std::string bytes;              // every token's bytes, concatenated
  std::vector<std::int32_t> ids;  // one per token (-1: the server gave none)
  std::vector<double> values;     // part embedding
  bool operator==(const ChoiceOutput&) const = default;
};
struct ExchangeOutputs {
  std::uint64_t id = 0;
  std::optional<std::uint64_t> source_id;
  RequestKey key;
  Error error;
  std::optional<std::string> expected;
  std::vector<ChoiceOutput> choices;
  std::string dialect;  // as Exchange::dialect: "" when nothing was decoded
  std::string method, target;  // the request's (what a "not compared" says it was)
  std::int32_t in_flight_at_send = -1;  // as Exchange's
  std::int64_t cached_tokens = -1;      // Exchange's server.cached_tokens
  double preemptions = -1;              // Exchange's server_state.preemptions
  bool operator==(const ExchangeOutputs&) const = default;
};
// The outputs of a whole exchange: what TraceReader::next(ExchangeOutputs&) reads of its record.
// Reuses `out`'s storage.
void outputs_of(const Exchange& exchange, ExchangeOutputs& out);

// Request key: xxh3-128 over the canonical request — method, path, and the body with JSON object
// keys sorted recursively (a body that is not JSON is hashed as its bytes).
RequestKey request_key(std::string_view method, std::string_view target, std::string_view body);
// The key of a body already parsed into `body` (bytes that parsed as JSON): the same as the key
// of those bytes, or of any bytes that parse to an equal value, without parsing them again.
RequestKey request_key_of_parsed(std::string_view method, std::string_view target,
                                 const boost::json::value& body);

// ---------------------------------------------------------------------------------------------
// Writing

// The most decompressed bytes one zstd frame holds, and so the largest record: what the reader
// accepts by default (ReaderOptions::traversal_limit_words). The writer closes a frame before a
// record would take it past this, whatever flush_every and flush_ms say, so that every frame it
// writes can be read back.
inline constexpr std::uint64_t kMaxFrameBytes = 512ull << 20;
// The most bytes one Text or Data field of a record holds (Cap'n Proto: a 29-bit length, and
// Text counts its NUL). A body past it cannot be stored whole in any record.
inline constexpr std::uint64_t kMaxBlobBytes = (1ull << 29) - 2;

struct WriterOptions {
  std::size_t flush_every = 64;     // close a zstd frame after this many exchanges...
  std::int64_t flush_ms = 1000;     // ...or when the oldest unflushed exchange is this old
  std::uint64_t max_frame_bytes = kMaxFrameBytes;  // ...or before it would pass this size
  // ...or once it holds this much, decompressed: a reader holds one frame at a time, and 64 long
  // streamed answers (megabytes each) in one frame made stats and diff take hundreds of MB.
  std::uint64_t frame_target_bytes = 4u << 20;
  int zstd_level = 3;
  bool write_index = true;  // the skippable index frame at close() (spilled meanwhile: flat memory)
  const Clock* clock = &Clock::system();  // what flush_ms is measured on; outlives the writer
  bool derive_tokens = false;  // format 1.7's derived tokens (token_deriver.hpp's trade-off): off
};

struct IndexedKey;  // below, with the reader's index

// Writes a trace. Not thread-safe: one writer per file, fed from one strand/thread.
// Throws TraceError on I/O failure (a full disk included), naming the file and the offset.
class TraceWriter {
 public:
  // Creates (truncates) `path` with mode 0600 and writes the header at once, so an unwritable
  // destination fails before any traffic flows.
  TraceWriter(const std::filesystem::path& path, const TraceHeader& header, WriterOptions = {});
  ~TraceWriter();  // close()s, swallowing errors; call close() to see them
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  // An exchange whose record alone would pass max_frame_bytes, or with a field past
  // kMaxBlobBytes, is written without its request and response bodies and raw events (tokens,
  // timing and status kept), with a decode_note saying so; one still too large then without its
  // tokens either (said so too). Only one that cannot be stored even then (its headers alone
  // pass the limit) throws TraceError, and leaves the file as it was.
  void write(const Exchange& exchange);
  // One scrape of the target's /metrics, a record among the exchanges (not one of them).
  void write(const MetricScrape& scrape);
  void flush();  // close the current frame and fsync-free write it out
  // Closes the current frame if its oldest exchange is flush_ms old. write() checks this itself;
  // call it from a timer too, so an idle writer does not sit on a frame. True if it flushed.
  bool flush_if_due();
  void close();  // flush, append the index, close the file
  // Appends one zstd frame another writer wrote, byte for byte (no exchange decoded or compressed
  // again): it holds `records` records, of which key_count are exchanges whose keys are `keys`
  // (their `frame` fields are ignored; the index gets this file's frame number). Closes the open frame first. For
  // copy_trace_with_header (format/trace_copy.hpp).
  void append_frame(std::string_view frame, std::uint32_t records,
                    const IndexedKey* keys, std::size_t key_count);
  std::uint64_t exchanges_written() const;
  std::uint64_t bytes_written() const;
  // The file's size were it closed now, never less (bytes still in the compressor counted as they
  // went in, and the index at close): what record rotates segments by (--rotate-size).
  std::uint64_t size_estimate() const;
  // Exchanges in frames wholly written to the file: after a write failure (a full disk), the
  // ones a reader will get back; the rest of exchanges_written() were lost with the open frame.
  std::uint64_t exchanges_flushed() const;
  // After close(): why the index was not written ("" when it was, or was not asked for). An
  // index that would pass max_frame_bytes is left out rather than make the file unreadable;
  // the reader reads every frame in order either way.
  const std::string& index_note() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// ---------------------------------------------------------------------------------------------
// Reading

// What a reader needs of the tokens the decoder makes (live, or derived from a format 1.7 record's
// events: token_deriver.hpp): everything by default. A reader that never shows alternatives (stats'
// counts and arrival offsets, diff's ids and bytes, a table's rows) asks for them left out, and the
// decoder then does not build them: every other field (token count, ids, bytes, logprobs, offsets,
// kinds, finish reasons, parts, usage, notes, errors) is what the full decode gives, and each token's
// top_begin and top_count are 0 (tests/llm_lean_decode_test.cpp).
struct DecodeWants {
  bool alternatives = true;
  // Without values (kNoLogprobValues, with no alternatives): each token's has_logprob is what the
  // full decode gives and its logprob 0 (the fast path checks each number's syntax, converts none).
  bool logprob_values = true;
  bool operator==(const DecodeWants&) const = default;
};
inline constexpr DecodeWants kNoAlternatives{.alternatives = false};
// Neither alternatives nor logprob values: what replay's and record's live decode keep when the
// trace derives the tokens from the events (--derive-tokens, format/token_deriver.hpp): counts,
// arrivals, ids, bytes, has_logprob, kinds, finish reasons, parts, usage, notes and errors, as the
// full decode gives them.
inline constexpr DecodeWants kNoLogprobValues{.alternatives = false, .logprob_values = false};

struct ReaderOptions {
  std::uint64_t traversal_limit_words = kMaxFrameBytes / 8;  // per message and per frame
  int nesting_limit = 64;
  DecodeWants derived{};  // what next(Exchange&) and read_last derive of a format 1.7 exchange's tokens
};

// What the reader had to drop: damaged regions in the middle of a file, skipped by
// resynchronising at the next frame, and a torn tail (a crash, a torn write) at the end.
struct Recovery {
  bool torn = false;
  std::uint64_t dropped_from_offset = 0;  // file offset where the unreadable tail begins
  std::uint64_t dropped_bytes = 0;
  std::string reason;
  std::uint64_t skipped_regions = 0;       // damaged frames (or runs of them) skipped
  std::uint64_t skipped_bytes = 0;
  std::uint64_t first_skipped_offset = 0;
  std::string skipped_reason;              // the first skipped region's
  // A segment set (segments.hpp): segments missing from between present ones (a gap in the
  // numbers), the first of them; a segment before the last that is torn or unreadable counts as
  // a skipped region, its reason naming the segment.
  std::uint64_t missing_segments = 0;
  std::uint64_t first_missing_segment = 0;
  bool clean() const { return !torn && skipped_regions == 0 && missing_segments == 0; }
};
// One line for a warning: "torn tail: dropped N bytes from offset X (why); skipped K damaged
// regions, B bytes, the first at offset Y (why)"; "" when clean.
std::string describe(const Recovery& recovery);

// The index a writer appends at close(): where each frame starts, and every exchange's key.
struct IndexedFrame {
  std::uint64_t offset = 0;        // file offset of the zstd frame
  std::uint64_t first_record = 0;  // ordinal of its first record (the header is record 0)
  std::uint32_t records = 0;
  bool operator==(const IndexedFrame&) const = default;
};
struct IndexedKey {
  std::uint64_t exchange_id = 0;
  RequestKey key;
  std::uint32_t frame = 0;  // position in TraceIndex::frames
  bool operator==(const IndexedKey&) const = default;
};
struct TraceIndex {
  std::vector<IndexedFrame> frames;
  std::vector<IndexedKey> keys;
};

// Where a record is in its file: the zstd frame it is in, and its place among that frame's
// messages (0 first). What a reader that plans from one pass keeps of a record, to read it again
// when its turn comes (TraceReader::read_request_at) instead of holding it.
struct RecordPosition {
  std::uint64_t segment = 0;  // the segment's number in a segment set; 0 for a single file
  std::uint64_t frame_offset = 0;
  std::uint32_t message = 0;
  bool operator==(const RecordPosition&) const = default;
};

class TraceError : public std::exception {
 public:
  explicit TraceError(std::string message) : message_(std::move(message)) {}
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  std::string message_;
};

// Streams a trace with bounded memory: one zstd frame and one message at a time.
// The constructor reads the header and throws TraceError when the file is not a trace, is newer
// than this reader understands, or has no readable header.
// `path` may be a segment set (a directory of segments, segments.hpp): its segments are read in
// number order as one trace, one open at a time; header() is the first readable segment's;
// a gap or a segment before the last that is torn or unreadable is in recovery() and the rest is
// read; the last segment's torn tail (the one record is writing) is recovery().torn. file_size()
// and decompressed_bytes() count every segment read so far; has_index() and index() are the
// current segment's.
class TraceReader {
 public:
  explicit TraceReader(const std::filesystem::path& path, ReaderOptions = {});
  ~TraceReader();
  TraceReader(const TraceReader&) = delete;
  TraceReader& operator=(const TraceReader&) = delete;
  const TraceHeader& header() const;
  // Next exchange into `out` (reusing its storage); false at the end. A torn or corrupt tail ends
  // the stream and is described by recovery(); it is not an exception.
  bool next(Exchange& out);
  // The same record read for what sending its request again needs: the response, choices and
  // usage left empty and unread (a recording's bulk), everything else read. For replay.
  bool next_request(Exchange& out);
  // The same record read for its outputs only (ExchangeOutputs: no copy of the request, response,
  // per-token strings or alternatives), the rest left in the decoded frame; read_last() decodes
  // the whole of it on demand, until the next call of either next(). For diff.
  bool next(ExchangeOutputs& out);
  // The whole exchange next(ExchangeOutputs&) last returned. Throws TraceError when there is none,
  // or when its record is corrupt in a part the outputs did not read.
  void read_last(Exchange& out);
  // The position of the record the last next() or next_request() returned.
  RecordPosition position() const;
  // The request of the record at `at` (a position() of this file) into `out`, as next_request()
  // reads it; the reader is then at that record (next() goes on after it). Reading forward
  // within a frame, and again in the frame just read, decodes nothing again. Throws TraceError
  // when no readable exchange is there: the file changed since the position was taken.
  void read_request_at(RecordPosition at, Exchange& out);
  // Every /metrics scrape record next() passes on its way is handed to `sink` (null: skipped).
  void on_metrics(std::function<void(const MetricScrape&)> sink);
  const Recovery& recovery() const;
  std::uint64_t file_size() const;
  std::uint64_t decompressed_bytes() const;  // so far
  bool has_index() const;                    // known once next() returned false
  const TraceIndex& index() const;           // empty unless has_index()
  // The most memory the reader's buffers (one input chunk, one decompressed frame, the index)
  // have held so far: what "bounded memory" bounds.
  std::uint64_t peak_buffer_bytes() const;

 private:
  friend struct RecordAccess;  // format/record_access.hpp: the records themselves, for RowReader
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Reads a whole trace into memory (tests, small traces).
struct LoadedTrace {
  TraceHeader header;
  std::vector<Exchange> exchanges;
  Recovery recovery;
};
LoadedTrace load_trace(const std::filesystem::path& path, ReaderOptions = {});
// The same without each exchange's response (status, headers, body, events), choices and usage,
// dropped as it is read, so a recording loaded to be replayed holds its requests, not the several
// kilobytes of SSE events each exchange recorded. The rest is kept: id, key, session, times,
// request, labels, expected, and the error (replay skips what record rejected by it).
LoadedTrace load_requests(const std::filesystem::path& path, ReaderOptions = {});
// The same, reading only as far as `enough` asks: it sees each exchange as it is read, and true
// stops the reading there (that exchange kept). A caller that will use only the first N exchanges
// of a large trace then reads N, not the whole file; the index and anything damaged after them
// are never seen, so `recovery` speaks for the part read.
LoadedTrace load_requests(const std::filesystem::path& path, ReaderOptions,
                          const std::function<bool(const Exchange&)>& enough);

}  // namespace retrace
