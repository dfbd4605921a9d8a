# retrace trace format, Cap'n Proto schema, and the one description of a .rtrace file's bytes
# (format/trace.hpp, the writer, the reader and wire.hpp point here).
#
# A .rtrace file is a sequence of zstd frames, with an optional index at the very end:
#
#   zstd frame 0:      [segment table | segments] of Record{header}      (the header alone)
#   zstd frame k > 0:  [segment table | segments] of Record{exchange} ...  (one frame per flush)
#                      (1.5: Record{metrics}, a /metrics scrape, among them; not in the index's keys)
#                      (1.6: Exchange.server and serverState)
#                      (1.7: Exchange.tokensDerived, Choice.tokenCount: tokens rebuilt from events)
#   skippable frame:   u32le 0x184D2A5E, u32le size, [segment table | segments] of TraceIndex
#
# - zstd frames start with u32le 0xFD2FB528; skippable frames with u32le 0x184D2A5? (any low
#   nibble) and a u32le size, and stock zstd skips them. Only the one with 0x184D2A5E is the index;
#   readers skip any other.
# - Each zstd frame decodes on its own, carries a content checksum and holds whole messages only.
#   The writer closes a frame on every flush (every N exchanges or T ms) and before a record would
#   take it past the largest frame a reader accepts, so a torn tail loses at most the last frame.
# - The decompressed bytes of all zstd frames, concatenated, are a plain sequence of Cap'n Proto
#   messages in standard stream framing, each with root `Record`, so
#   `zstd -dc run.rtrace | capnp decode format/trace.capnp Record` prints every record.
# - The index (`TraceIndex`: frame offsets, request keys) is optional; without it a reader scans.
#
# Versioning: fields are only ever appended (Cap'n Proto rules). `Header.formatMajor` changes only
# when an old reader would misread a new file; readers refuse a newer major with a clear message.
# Minor bumps mark added fields that older readers may ignore.
#
# Conventions: every duration/offset is in nanoseconds. Integers that may be absent default to -1.

@0x98ff60019d4ed66c;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("retrace::wire");

struct Record {
  union {
    header @0 :Header;
    exchange @1 :Exchange;
    metrics @2 :MetricScrape;  # (format 1.5) the target's /metrics, scraped during a run; a 1.4
                               # reader skips it (it reads exchanges and skips other kinds)
  }
}

enum Source {
  recorded @0;
  replayed @1;
  imported @2;
}

struct Label {
  key @0 :Text;
  value @1 :Text;
}

struct HttpHeader {
  name @0 :Text;
  value @1 :Text;
}

struct Header {
  formatMajor @0 :UInt16;
  formatMinor @1 :UInt16;
  toolVersion @2 :Text;
  createdUnixNs @3 :Int64;
  source @4 :Source;
  target @5 :Text;        # upstream (record) or target (replay) URL; input file for imports
  settings @6 :Text;      # the record/replay/import settings, as a JSON object
  host @7 :Text;          # hostname of the machine that wrote the trace
  labels @8 :List(Label); # free labels (run name, concurrency, repeat, ...)
  serverInfo @9 :Text;    # JSON: what the server said about itself (/v1/models, /metrics, headers)
}

# What a choice's token stream is made of, so a report never compares text deltas while the user
# believes it compares token ids.
enum TokenKind {
  none @0;           # no tokens decoded (unknown dialect, error before any output)
  textDeltas @1;     # each token is one streamed text delta (may hold several real tokens)
  logprobTokens @2;  # tokens from a logprobs listing (text of each token, no id)
  tokenIds @3;       # the server gave real token ids
}

enum ErrorKind {
  none @0;
  connect @1;
  tls @2;
  timeout @3;
  reset @4;
  httpStatus @5;
  protocol @6;
  cut @7;            # stopped by us: client went away, shutdown deadline, --max-exchanges
  rejected @8;       # (format 1.2) never forwarded: record answered it itself (400, 413, 431);
                     # a 1.1 reader reads it as protocol
  serverError @9;    # (format 1.3) a 2xx response whose body or stream reported a server error
                     # ({"error": ...} or {"object": "error"}); a 1.2 reader reads it as protocol
  truncated @10;     # (format 1.3) a 2xx stream that ended without its end marker ([DONE]) and
                     # a finish reason; a 1.2 reader reads it as protocol
}

struct Alternative {
  id @0 :Int32 = -1;
  bytes @1 :Data;
  logprob @2 :Float32;
}

struct Token {
  id @0 :Int32 = -1;
  bytes @1 :Data;
  hasLogprob @2 :Bool;
  logprob @3 :Float32;
  offsetNs @4 :Int64;           # arrival of the event that carried it, from the request's send
  top @5 :List(Alternative);    # top alternatives at this position, best first, where given
}

# (format 1.4) Which part of an output a Choice's token stream is. One output choice (`index`) is
# one Choice per part it has: its answer (`content`, present in every generated choice, empty
# when the model said nothing but reasoning or calls), its reasoning, its refusal, each tool call (its
# name in `toolName`, its arguments as streamed in `tokens`, `toolCall` its position among the
# choice's calls), or an embedding (`values`, no tokens). Choices are sorted by index, then in the
# order a model generates the parts (reasoning, content, refusal, tool calls by position), then
# embeddings. An older reader ignores the new fields; a trace written before 1.4 reads every Choice
# as `content`: its text held reasoning, content, refusal and tool calls joined, as it was decoded.
enum Part {
  content @0;
  reasoning @1;
  refusal @2;
  toolCall @3;
  embedding @4;
}

struct Choice {
  index @0 :UInt32;
  kind @1 :TokenKind;
  tokens @2 :List(Token);
  finishReason @3 :Text;     # the output choice's, on each of its parts
  part @4 :Part;             # (1.4)
  toolCall @5 :UInt32;       # (1.4) part toolCall: position among this choice's calls, from 0
  toolName @6 :Text;         # (1.4) part toolCall: the function's name (the call's id is not kept)
  values @7 :List(Float64);  # (1.4) part embedding: the vector as the server sent it
  tokenCount @8 :UInt32;     # (1.7) with Exchange.tokensDerived: how many tokens `tokens` would
                             # hold (it is empty: they are rebuilt from the events when read)
}

struct Event {
  offsetNs @0 :Int64;   # arrival, from the request's send
  data @1 :Data;        # raw bytes as on the wire (an SSE event with its blank line, or a chunk)
}

struct Request {
  method @0 :Text;
  target @1 :Text;                # path and query
  headers @2 :List(HttpHeader);   # after redaction
  body @3 :Data;
}

struct Response {
  status @0 :UInt16;
  headers @1 :List(HttpHeader);
  body @2 :Data;                  # the whole body when not streamed
  streamed @3 :Bool;
  events @4 :List(Event);         # when streamed: concatenated, they are the body byte for byte
}

struct Usage {
  promptTokens @0 :Int64 = -1;
  completionTokens @1 :Int64 = -1;   # reasoning included, as servers count it
  totalTokens @2 :Int64 = -1;
  reasoningTokens @3 :Int64 = -1;    # (1.4) of completionTokens, where the server says
}

struct Error {
  kind @0 :ErrorKind;
  message @1 :Text;
}

struct Exchange {
  id @0 :UInt64;                  # sequence id within this trace
  sourceId @1 :UInt64;            # for a replay: id of the exchange it re-issued
  hasSourceId @2 :Bool;
  keyHi @3 :UInt64;               # request key: xxh3-128 of the canonical request
  keyLo @4 :UInt64;
  sessionId @5 :Text;
  startUnixNs @6 :Int64;          # wall clock at the actual send
  intendedSendNs @7 :Int64;       # from the run's start: when the schedule wanted it sent
  actualSendNs @8 :Int64;         # from the run's start: when it was sent
  firstByteNs @9 :Int64 = -1;     # from the send
  endNs @10 :Int64 = -1;          # from the send
  request @11 :Request;
  response @12 :Response;
  choices @13 :List(Choice);
  usage @14 :Usage;
  error @15 :Error;
  labels @16 :List(Label);
  hasExpected @17 :Bool;
  expected @18 :Text;             # expected answer, where a dataset supplies one
  dialect @19 :Text;              # wire dialect the response was decoded as ("" = unknown)
  decodeNote @20 :Text;           # why decoding was partial or impossible; "" when clean
  retries @21 :UInt8;             # times the request was sent again on a fresh connection after a
                                  # reused keep-alive one closed before any response byte (1.1)
  inFlightAtSend @22 :Int32 = -1; # (1.5) the client's requests in flight when this one was sent,
                                  # itself included; -1: not known (recorded, imported, older)
  inFlightMax @23 :Int32 = -1;    # (1.5) the most in flight at once while it ran, itself included
  server @24 :ServerSaid;         # (1.6) what the server said of this exchange (format/server_said.hpp)
  serverState @25 :ServerState;   # (1.6) the run's /metrics series joined to it (replay only)
  tokensDerived @26 :Bool;        # (1.7) every choice's `tokens` is left empty (its `tokenCount`
                                  # says how many) and rebuilt when read from response.events by
                                  # the decoder that made them live (format/token_deriver.hpp); the
                                  # writer sets it only when that rebuild gave back exactly the
                                  # tokens it was handed. A 1.6 reader sees the choices without tokens.
}

# (format 1.6) What the server said about one exchange: vLLM's `metrics`
# (--enable-per-request-metrics), llama.cpp's `timings`, SGLang's `meta_info`, TGI's x-*-time
# headers, usage's cached tokens. Milliseconds as the server measured them; -1: not said.
struct ServerSaid {
  source @0 :Text;                 # "vllm", "llamacpp", "sglang", "tgi", "usage"; "" nothing said
  queueMs @1 :Float64 = -1;
  ttftMs @2 :Float64 = -1;
  decodeMs @3 :Float64 = -1;
  e2eMs @4 :Float64 = -1;
  promptComputed @5 :Int64 = -1;   # prompt tokens computed, not served by a cache
  cachedTokens @6 :Int64 = -1;     # prompt tokens the prefix cache served
}

# (format 1.6) One moment of the run's /metrics series: the latest scrape sent at or before it
# whose answer had arrived when the exchange was written. -1: no scrape, or not exposed.
struct ServerSample {
  scrapeNs @0 :Int64 = -1;         # that scrape's offsetNs
  running @1 :Float64 = -1;
  waiting @2 :Float64 = -1;
  kvUsage @3 :Float64 = -1;
}

struct ServerState {
  atSend @0 :ServerSample;
  atFirstToken @1 :ServerSample;
  atEnd @2 :ServerSample;
  preemptions @3 :Float64 = -1;    # the preemptions counter's increase over scrapes in (send, end]
}

# (format 1.5) One scrape of the target's Prometheus /metrics during a run: a Record of its own,
# written among the exchanges as the run goes (a baseline before the first request, one every
# scrape interval, one after the last). Series names are normalised across engines (llm/
# exposition.hpp: running, waiting, kv_usage, preemptions, prefix_cache_queries, ...); a series
# no alias names is kept under its exposition name with its labels, `name{a="b"}`.
enum SeriesKind {
  gauge @0;      # the value as read
  counter @1;    # the increase since the previous scrape (0 at the baseline); a reset (a value
                 # below the previous one) counts from 0 and is said in the scrape's note
}

struct MetricValue {
  series @0 :Text;
  kind @1 :SeriesKind;
  value @2 :Float64;
}

struct MetricScrape {
  offsetNs @0 :Int64;            # when the GET was sent, from the run's start (Exchange.actualSendNs's clock)
  tookNs @1 :Int64 = -1;         # how long the answer took to arrive whole
  inFlight @2 :Int32 = -1;       # the client's requests in flight then
  values @3 :List(MetricValue);  # empty when the scrape failed (note says why)
  note @4 :Text;                 # "" when clean: unreachable, too large, malformed lines, resets
}

# Lives in a zstd skippable frame at the end of the file, outside the Record stream.
struct TraceIndex {
  frames @0 :List(FrameEntry);
  keys @1 :List(KeyEntry);
}

struct FrameEntry {
  offset @0 :UInt64;      # byte offset of the zstd frame in the file
  firstRecord @1 :UInt64; # ordinal of the first record in it (the header is record 0)
  records @2 :UInt32;
}

struct KeyEntry {
  exchangeId @0 :UInt64;
  keyHi @1 :UInt64;
  keyLo @2 :UInt64;
  frame @3 :UInt32;
}
