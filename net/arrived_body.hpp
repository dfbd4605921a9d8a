// A response body as it arrived, and the one rule for turning it into what a trace stores. Both
// `record` (a proxy worker's capture, finished on the trace thread) and `replay` (a worker's
// exchange, finished when its last byte is in) keep a body in flight as its bytes as received
// plus one 16-byte mark per read, and decode it once, after the last byte: no Event, Token or
// string per token while the answer streams, so an exchange in flight costs its raw bytes and
// a few bytes per read (bench/RESULTS.md, "in flight").
//
// The decode limit bounds what one body may cost decoded: the decoded bytes, and for an event
// stream its events' bookkeeping too (the Event records, counted by the capacity they really
// take), so that a stream of millions of tiny events (`:\n\n` x 10^8, a few KiB gzip'd) stops at
// the limit, not gigabytes past it. Past the limit, as when the content coding cannot be undone,
// the bytes as received are stored instead, in the pieces they arrived in.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "format/trace.hpp"
#include "llm/llm.hpp"
#include "net/content_coding.hpp"

namespace retrace::net {

// --max-response-bytes' default (replay, record, sweep, study): one response as received, held
// until it ends, may take this much memory and no more.
inline constexpr std::size_t kDefaultMaxResponseBytes = std::size_t(256) << 20;

// One read's bytes: where they end in the body, and when they arrived (from the request's send).
struct ArrivedChunk {
  std::int64_t offset_ns;
  std::size_t end;
};

// The one rule for a response that passes --max-response-bytes (a stream that never ends): one
// read's `piece` appended to `bytes` with its mark, cut at `limit` bytes in all. False when the
// body would pass the limit: the caller stops reading, closes the connection and gives the exchange
// response_limit_error(); what arrived up to the limit is kept and decoded as usual.
bool append_within(std::string& bytes, std::vector<ArrivedChunk>& chunks, std::string_view piece,
                   std::int64_t offset_ns, std::size_t limit);
// The decode limit (decode_arrived) under --max-response-bytes: a whole body may be that large
// decoded as well as received, so that 509 KB of gzip cannot become 500 MB of body and 2 GB of
// decoding (past it the body is stored as received, with a note); an event stream four times
// that, its events' bookkeeping counted (a stream cut at the bound is still decoded).
inline std::size_t decode_limit_for(std::size_t max_response_bytes, bool event_stream) {
  const std::size_t limit = event_stream ? 4 * max_response_bytes : max_response_bytes;
  return limit < kMaxDecodedBytes ? limit : kMaxDecodedBytes;
}
// The error (ErrorKind::truncated) of an exchange append_within() cut.
Error response_limit_error(std::size_t limit);
// --max-response-bytes N (replay's, sweep's, study's and record's; named by `flag`): from 1 to
// kMaxBlobBytes (what one trace field holds), or throws std::invalid_argument saying so.
std::size_t check_max_response_bytes(std::uint64_t bytes, std::string_view flag = "--max-response-bytes");

struct ArrivedBody {
  std::string bytes;  // as received: still coded when the response's Content-Encoding says so
  std::vector<ArrivedChunk> chunks;
  void append(std::string_view piece, std::int64_t offset_ns) {
    bytes.append(piece);
    chunks.push_back({offset_ns, bytes.size()});
  }
  bool append_within(std::string_view piece, std::int64_t offset_ns, std::size_t limit) {
    return net::append_within(bytes, chunks, piece, offset_ns, limit);
  }
};

// How much a stream took. A workload's streams are alike in length: a worker's next one reserves
// about as much (reserve_like), so its bytes are not copied again on every doubling of their
// string; a shorter one only leaves room unused until it is finished.
struct ArrivedSize {
  std::size_t bytes = 0;
  std::size_t chunks = 0;
};
// Reserves what `last` took plus an eighth: the string then grows once or never (the relay's
// largest copy in record's profile, bench/RESULTS.md). At most 1 MiB of bytes, and as much again
// of marks: a long stream before a short one must not make every later one hold megabytes.
void reserve_like(std::string& bytes, std::vector<ArrivedChunk>& chunks, ArrivedSize last);

struct DecodedBody {
  bool as_received = false;  // stored as received: not decodable, or past the decode limit
  std::string note;          // the decode_note's part for the body ("" when clean)
};

// Fills `response.events` (an event stream) or `response.body` from `body` (moved from when it is
// taken as it is: an identity body that is not a stream), undoing
// `content_encoding`; an event stream's events go to `decoder` as they are framed (when given).
// A stream cut mid-event keeps its tail raw as a last event at `end_ns`. A body that is not an
// event stream is not given to the decoder: the caller does (ResponseDecoder::on_body), unless
// it is stored as received.
DecodedBody decode_arrived(std::string& body, std::span<const ArrivedChunk> chunks, bool event_stream,
                           std::string_view content_encoding, Response& response,
                           llm::ResponseDecoder* decoder, std::int64_t end_ns,
                           std::size_t decode_limit = kMaxDecodedBytes);

}  // namespace retrace::net
