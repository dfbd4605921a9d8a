// The recording reverse proxy: clients talk to it as if it were their inference server; it forwards
// every request to the upstream, streams each response back chunk by chunk as it arrives, and
// writes one Exchange per request to a trace.
//
// Threads: N proxy workers, each an io_context of its own with its own upstream pool (no locks on
// the relay path); one control thread (acceptor, timers, status line, the shutdown sequence) told
// of SIGINT/SIGTERM by a signal watcher thread (base/stop_signals.hpp); one trace thread that owns
// the TraceWriter. Workers hand captured exchanges to the trace thread through a queue bounded
// in bytes (a worker waits for room: back-pressure, never a dropped exchange; trace_sink.hpp);
// SSE splitting, token decoding and redaction happen there, off the relay path.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.hpp"
#include "format/redaction.hpp"
#include "format/trace.hpp"
#include "net/arrived_body.hpp"
#include "net/connection.hpp"
#include "net/scrape_settings.hpp"
#include "net/url.hpp"

namespace retrace::record {

// --out DIR/ with --rotate-every / --rotate-size, and retention: format/segments.hpp for the
// files, trace_output.hpp for when segments close and go.
struct SegmentOptions {
  bool segmented = false;                      // --out names a directory (DIR/ or an existing one)
  std::chrono::nanoseconds rotate_every{0};    // 0: not by time
  std::uint64_t rotate_size = 0;               // 0: not by size
  std::uint64_t max_disk = 0;                  // 0: no budget
  std::chrono::nanoseconds keep_for{0};        // 0: kept for ever
};
// The smallest --rotate-size: one frame's worth of a recording (the writer's frame_target_bytes
// holds 4 MiB decompressed, about a MiB compressed at record's level): below it a segment would
// be mostly header and index.
inline constexpr std::uint64_t kMinRotateSize = 1u << 20;

// What a running proxy has relayed so far: the figures of RecordSummary's names, read while it runs.
struct RecordProgress {
  std::uint64_t forwarded = 0, sampled_out = 0, probes = 0, excluded = 0;
};
// RecordOptions::on_started's argument.
struct RunningProxy {
  std::function<void(const std::string& reason)> stop;
  std::function<RecordProgress()> progress;
};

struct RecordOptions {
  net::Url upstream;
  std::filesystem::path out;
  net::ListenAddress listen{"127.0.0.1", 0};
  std::string session_header;               // request header naming a session; "" = none
  std::vector<std::string> redact_headers;  // in addition to format/redaction.hpp's policy
  bool keep_secrets = false;                // record every header verbatim
  std::vector<std::string> include_paths;   // fnmatch globs on the path; empty = all
  std::vector<std::string> exclude_paths;
  std::size_t max_body = 32u << 20;         // request body limit (413 beyond)
  std::size_t max_header = 64u << 10;       // request header limit (431 beyond)
  // --max-response-bytes: a recorded response as received past this is cut (its client's
  // stream ended short, the upstream closed) and written as truncated, up to it.
  std::size_t max_response_bytes = net::kDefaultMaxResponseBytes;
  // Requests refused for these limits, or malformed (400), are answered by record and recorded
  // with ErrorKind::rejected, as far as they were read.
  // --flush-every / --flush-ms. zstd level 1 while recording live: 0.82× the proxy's CPU per
  // streamed token of level 3, for 7–9 % more bytes (bench/RESULTS.md, record, issue 18).
  WriterOptions writer{.zstd_level = 1};
  SegmentOptions segments;
  net::TlsOptions tls;
  std::chrono::milliseconds upstream_timeout{60'000};  // connect, and each wait for bytes
  std::chrono::milliseconds duration{0};               // 0 = until a signal
  std::uint64_t max_exchanges = 0;                     // 0 = no limit
  std::chrono::milliseconds drain_timeout{5'000};      // in-flight grace after SIGINT/SIGTERM
  unsigned threads = 0;                                // proxy workers; 0 = one per core
  bool fetch_server_info = true;                       // GET /v1/models at start, best effort
  bool live_status = false;                            // one-line status on stderr
  // --scrape-interval / --scrape-url: the upstream's /metrics into the trace (net/scrape.hpp).
  // Off unless asked for: a proxy left up for weeks in front of production traffic should not
  // add a GET a second to its upstream, and series to its retention budget, unasked.
  net::ScrapeSettings scrape{.enabled = false, .interval = std::chrono::seconds(1), .url = {}, .body_limit = 8u << 20};
  // --sample F / --seed: the fraction of sessions recorded (record/sampling.hpp); 1 = all.
  double sample = 1.0;
  std::uint64_t seed = 0;
  // --admin-listen: /healthz, /readyz and /metrics (record/admin.hpp); unset = no admin endpoint.
  std::optional<net::ListenAddress> admin_listen;
  bool admin_listen_any = false;  // --admin-listen-any: a non-loopback admin address allowed
  // Called with the admin endpoint's URL once it listens (before on_listening).
  std::function<void(const std::string&)> on_admin_listening;

  // Hooks for a command built on this proxy (`retrace shadow`, shadow/); unset for record.
  // on_answered: on the proxy worker, for each recorded exchange once the upstream's response
  // header arrived, with the request as the client sent it (before redaction); what it returns
  // is the exchange's tag. It must not block (the client waits for the relay).
  std::function<std::uint64_t(const Request& request)> on_answered;
  // on_written: on the trace thread, each exchange written, with its tag (0 without on_answered).
  std::function<void(std::uint64_t tag, const Exchange& exchange)> on_written;
  // on_started: once the proxy runs, with what a command may call on it from any thread (stop it
  // for `reason`, read its progress) until on_stopping.
  std::function<void(const RunningProxy& proxy)> on_started;
  // on_stopping: before run_recorder returns, however it ends: RunningProxy's functions must not be
  // called from then on.
  std::function<void()> on_stopping;
  // extra_metrics: appended to the admin endpoint's /metrics text (admin thread).
  std::function<std::string()> extra_metrics;
};

// --include-path / --exclude-path: fnmatch globs on the target's path (query ignored); '*' also
// matches '/'. Unselected requests are forwarded but not recorded.
bool path_selected(std::string_view target, const std::vector<std::string>& include,
                   const std::vector<std::string>& exclude);

// What a proxy worker captured, before the trace thread finishes it.
struct CapturedExchange {
  Exchange exchange;  // request, timing, status, headers and error already filled in
  // The response body's bytes as relayed (still coded when content_encoding says so), one mark
  // per read from upstream, compressed as they arrive (net/arrived_blocks.hpp).
  net::ArrivedBody body;
  bool event_stream = false;  // Content-Type text/event-stream
  std::string content_encoding;  // the response's Content-Encoding, "" when none
  std::uint64_t tag = 0;  // RecordOptions::on_answered's, handed to on_written
};

// Runs on the trace thread: redaction, the body's content coding undone, SSE events (raw, with
// offsets; concatenated they are the decoded body), token decoding, request key. `id` is the exchange's sequence number.
// `decode_limit` bounds the decoded body, and for a stream its events with their bookkeeping;
// past it the body is stored as received (net/content_coding.hpp). True when the exchange's
// choices are what its stored events give fed again into a decoder of its dialect (a stream
// decoded whole, in the dialect it was decoded in): the writer may take its word
// (format/token_deriver.hpp, TokensFromEvents) and not decode the events again.
// `live`, when given: in, what of the tokens nobody on the trace thread reads when the word is
// given (kNoLogprobValues with --derive-tokens and no on_written); out, what the decode kept:
// those wants only where the word is sure before decoding (net::live_wants, under `writer`, the
// options of the writer that will write it), else everything.
bool finish_exchange(CapturedExchange&& captured, const Redactor& redactor, std::uint64_t id,
                     Exchange& out, std::size_t decode_limit = kMaxBlobBytes, DecodeWants* live = nullptr,
                     const WriterOptions& writer = {});

// Settings JSON for the trace header.
std::string settings_json(const RecordOptions& options);

struct RecordSummary {
  std::uint64_t exchanges = 0;  // written to the trace
  std::uint64_t forwarded = 0;  // requests relayed, recorded or not (rejected ones are not relayed)
  // Forwarded and kept out of the trace: not in --sample's fraction, marked X-Retrace-Probe, or
  // outside --include-path/--exclude-path.
  std::uint64_t sampled_out = 0, probes = 0, excluded = 0;
  std::array<std::uint64_t, kErrorKindCount> errors_by_kind{};  // indexed by ErrorKind
  std::uint64_t tokens = 0;
  std::uint64_t lost = 0;  // captured but not written (trace write failure)
  // Times a worker waited for the trace thread (its queue at its bound): back-pressure, not loss.
  std::uint64_t queue_full_waits = 0;
  std::uint64_t trace_bytes = 0;  // every segment's
  bool segmented = false;
  std::uint64_t segments_opened = 0;
  std::uint64_t segments_deleted = 0;
  std::uint64_t bytes_deleted = 0;
  std::string write_error;  // non-empty when the trace could not be written to the end
  std::string index_note;   // why the trace has no index ("" when it has one)
  std::string stop_reason;  // "interrupted", "--duration elapsed", ...
};

// Opens the trace (throws TraceError when it cannot be written: before any traffic), listens,
// calls `on_listening("http://HOST:PORT")`, and relays until SIGINT/SIGTERM, --duration,
// --max-exchanges or a trace write failure. Progress goes to `log`. Every time written to the
// trace (the header's creation, each exchange's offsets and start) is read from `clock`
// (Clock::system() in production); waits and deadlines run on real time.
RecordSummary run_recorder(const RecordOptions& options,
                           const std::function<void(const std::string&)>& on_listening,
                           std::ostream& log, const Clock& clock);

}  // namespace retrace::record
