// HTTP content codings (RFC 9110 8.4): turning a response body sent with `Content-Encoding:
// gzip | deflate | br | zstd` back into the bytes the server's application wrote. The recorder
// relays the upstream's bytes to its client untouched and decodes a copy for the trace; the
// replayer decodes what it receives. Both feed the body piece by piece as it arrives, so that an
// event of a compressed stream keeps the arrival time of the bytes that completed it.
//
//   gzip     RFC 1952; concatenated members decode as one body, as gzip(1) does.
//   deflate  RFC 9110 says zlib (RFC 1950); some servers send raw deflate (RFC 1951), so the
//            first two bytes decide, as curl and browsers do.
//   br       RFC 7932.
//   zstd     RFC 8878; concatenated frames decode as one body; windows over 8 MiB are refused
//            (RFC 9659: a zstd content coding's window is at most 8 MiB).
// A list ("gzip, br") names codings in the order they were applied; they are undone in reverse.
// "identity" and an empty value mean no coding.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "format/trace.hpp"

namespace retrace::net {

// The most bytes one body may decode to. A decoded body goes into one field of an exchange
// record, and a field past kMaxBlobBytes cannot be stored anyway; stopping there bounds what a
// decompression bomb (a few KiB that inflate to gigabytes) can cost.
inline constexpr std::size_t kMaxDecodedBytes = kMaxBlobBytes;

// The codings this decoder undoes, in Accept-Encoding's spelling.
inline constexpr std::string_view kDecodableCodings[] = {"gzip", "deflate", "br", "zstd"};

// An Accept-Encoding value limited to the codings above, keeping the client's order and
// q-values ("gzip, deflate, sdch" → "gzip, deflate"); "" when none of them is left. A server may
// then answer only with codings that can be decoded.
std::string decodable_accept_encoding(std::string_view accept_encoding);

class ContentDecoder {
 public:
  // `content_encoding`: the response's Content-Encoding value. An unknown coding fails at once
  // (failed() is true, error() names it).
  explicit ContentDecoder(std::string_view content_encoding,
                          std::size_t max_decoded = kMaxDecodedBytes);
  ~ContentDecoder();
  ContentDecoder(ContentDecoder&&) noexcept;
  ContentDecoder& operator=(ContentDecoder&&) noexcept;

  // False for an identity body: callers use the bytes as they are, with no copy.
  bool active() const { return active_; }
  // Appends what `coded` decodes to onto `out`. False once decoding has failed: error() says
  // why and where, and later calls append nothing.
  bool feed(std::string_view coded, std::string& out);
  // The body ended: false (with error()) when it ended inside a compressed stream.
  bool finish();
  bool failed() const { return !error_.empty(); }
  // Failed only at finish(): everything fed decoded, but the body ended inside a compressed
  // stream (a response cut short).
  bool cut_short() const { return cut_short_; }
  // "Content-Encoding gzip: corrupt gzip data at byte 1234 of its input (invalid block type)".
  const std::string& error() const { return error_; }
  // The trace's rule (docs/DESIGN.md, the trace format): a body is stored decoded; when it could
  // not be decoded, the bytes as received are stored instead, unless it was only cut short (then
  // what decoded is stored). The decode_note saying which: "" when nothing failed.
  std::string trace_note() const;
  const std::string& coding() const { return coding_; }

  struct Stage;  // one coding's decompressor (content_coding.cpp)

 private:
  std::string coding_;
  std::vector<std::unique_ptr<Stage>> stages_;  // in decoding order: the last coding applied first
  std::string between_[2];                      // output of one stage, input of the next
  std::string error_;
  bool active_ = false;
  bool cut_short_ = false;
};

}  // namespace retrace::net
