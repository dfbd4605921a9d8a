// Exchanges read for one row of a table and its figures (python/'s Trace.exchanges(), `stats`'s
// metrics::stats_of_trace): a reading
// of each record that leaves out what a row never shows, so that a million streamed exchanges
// cost little more than their decompression. What is read into the Exchange, and what is not:
//
//   read as TraceReader::next reads it: identity, session, times, the request (method, target,
//     headers, body), error, labels, expected, dialect, decode note, retries, requests in flight,
//     what the server said and its state; the response's status, streamed flag, and its body
//     when not streamed; every choice's index, kind, finish reason, part and tool call; every
//     token's id, logprob and arrival offset; the usage; every event's arrival offset.
//   left empty: the response's headers; a streamed response's body (it has none); each token's
//     bytes and alternatives; an embedding's values and a tool call's name; the data of every
//     event but the last ones, those sweep's cached_tokens_of may read (from the end, until four
//     hold a JSON object that does not mention a cache: the four its walk counts at least).
//
// So metrics::summarize, output_tokens() and sweep::cached_tokens_of give on it what they give
// on the whole exchange. A record this reading cannot take as it is goes through the reader's own
// read_exchange instead (so it stays right whatever a later minor version adds): a trace whose
// header is of a minor version newer than kRowsReadThrough (every record of it), a record with
// more parts than the reader reads (kMaxParts: read_exchange notes the rest), a record whose
// tokens are derived from its events (format 1.7, `--derive-tokens`: read_exchange derives them,
// for each token's arrival offset, without alternatives: kNoAlternatives), or an enumerant
// newer than this reading knows. A record corrupt in a part this reading does not touch is kept
// here where TraceReader::next drops the rest of its frame.
#pragma once

#include <filesystem>

#include "format/trace.hpp"

namespace retrace {

// The newest format minor version this reading knows every field of (trace.hpp's history).
inline constexpr std::uint16_t kRowsReadThrough = 7;

class RowReader {
 public:
  // `reads_through`: the newest minor version read directly (a test gives an older one to see a
  // newer file read whole: the writer stamps only the current version).
  explicit RowReader(const std::filesystem::path& path, ReaderOptions options = {},
                     std::uint16_t reads_through = kRowsReadThrough);
  const TraceHeader& header() const { return reader_.header(); }
  // The next exchange into `out` (reusing its storage), read as above; false at the end.
  bool next(Exchange& out);
  const Recovery& recovery() const { return reader_.recovery(); }
  // Whether records are read directly (false: every record through read_exchange).
  bool direct() const { return direct_; }
  // Records read through read_exchange so far (all of them when !direct()).
  std::uint64_t read_whole() const { return whole_; }

 private:
  TraceReader reader_;
  bool direct_;
  std::uint64_t whole_ = 0;
  // The storage read_exchange's request-side reading would release, kept across records.
  Events events_;
  std::vector<Choice> choices_;
};

}  // namespace retrace
