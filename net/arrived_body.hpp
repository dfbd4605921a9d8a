// A response body as it arrived, and the one rule for turning it into what a trace stores. Both
// `record` (a proxy worker's capture, finished on the trace thread) and `replay` (a worker's
// exchange, finished when its last byte is in) keep a body in flight as its bytes as received,
// compressed in blocks, with a few bytes of mark per read (net/arrived_blocks.hpp), and decode it
// once, after the last byte: no Event, Token or string per token while the answer streams, so
// an exchange in flight costs a few tens of bytes a token (bench/RESULTS.md, "in flight").
//
// The decode limit bounds what one body may cost decoded: the decoded bytes, and for an event
// stream its events' bookkeeping too (the Event records, counted by the capacity they really
// take), so that a stream of millions of tiny events (`:\n\n` x 10^8, a few KiB gzip'd) stops at
// the limit, not gigabytes past it. Past the limit, as when the content coding cannot be undone,
// the bytes as received are stored instead, in the pieces they arrived in.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "format/trace.hpp"
#include "llm/llm.hpp"
#include "net/arrived_blocks.hpp"
#include "net/content_coding.hpp"

namespace retrace::net {

// --max-response-bytes' default (replay, record, sweep, study): one response as received, held
// until it ends, may take this much memory and no more.
inline constexpr std::size_t kDefaultMaxResponseBytes = std::size_t(256) << 20;

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

struct DecodedBody {
  bool as_received = false;  // stored as received: not decodable, or past the decode limit
  std::string note;          // the decode_note's part for the body ("" when clean)
};

// Fills `response.events` (an event stream) or `response.body` from `body` (emptied when it is
// taken whole: a body that is not a stream), undoing
// `content_encoding`; an event stream's events go to `decoder` as they are framed (when given).
// A stream cut mid-event keeps its tail raw as a last event at `end_ns`. A body that is not an
// event stream is not given to the decoder: the caller does (ResponseDecoder::on_body), unless
// it is stored as received.
DecodedBody decode_arrived(ArrivedBody& body, bool event_stream,
                           std::string_view content_encoding, Response& response,
                           llm::ResponseDecoder* decoder, std::int64_t end_ns,
                           std::size_t decode_limit = kMaxDecodedBytes);
// Whether decode_arrived will frame every event of `body` (an event stream) and store them, not
// the body as received, whatever its bytes: no content coding to fail, and too few bytes for the
// events' bookkeeping to pass `decode_limit` even at one event a byte. Known before decoding, so a
// caller can choose what its decoder keeps by it (replay's and record's --derive-tokens).
bool decodes_whole(const ArrivedBody& body, std::string_view content_encoding, std::size_t decode_limit);
// What a producer's live decode keeps (replay's worker, record's trace thread): `wanted` (less than
// the full decode when the trace derives the tokens and nobody reads their values live) only where
// the writer may take that decode's word, sure before decoding: a stream of a known dialect whose
// every event is framed (decodes_whole) and written in its record (written_whole); else the full
// decode, as the trace then stores what it makes. The one rule both producers follow.
DecodeWants live_wants(DecodeWants wanted, bool known_dialect, bool event_stream, const ArrivedBody& body,
                       std::string_view content_encoding, std::size_t decode_limit, const Exchange& exchange,
                       const WriterOptions& writer);

}  // namespace retrace::net
