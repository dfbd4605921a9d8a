// Internal to replay/: the run's plan. Requests are prepared once before the run (so that a bad
// --set fails before any traffic), except for live-session substitution, which needs this run's
// answers; chains group them into sessions and carry the schedule's start times.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_set>
#include <optional>
#include <vector>

#include <boost/beast/http/verb.hpp>

#include "replay/preflight.hpp"
#include "replay/replay.hpp"
#include "replay/request_body.hpp"

namespace retrace::replay {

// A request as it goes out, and the parts of its record that do not change from one send to the
// next (worked out once here, not per send: bench/RESULTS.md, replay non-streaming).
struct PreparedRequest {
  boost::beast::http::verb verb = boost::beast::http::verb::post;
  std::string method;
  std::string target;               // joined with the base path
  // Headers as sent (secrets in clear), and as recorded (secret values redacted): shared by the
  // requests of one frame (Preparer::Frame), not copied into each. Null: none.
  std::shared_ptr<const std::vector<HttpHeader>> headers, recorded_headers;
  std::string body;
  // --set-secret: `body` with the environment's values where it holds the marker; what goes on the
  // wire (and `head` is of it), while the record keeps `body`.
  std::optional<std::string> secret_body;
  bool sends_redacted = false;  // the marker still goes out (replay/secret_fill.hpp)
  RequestKey key;  // request_key of method, target and body
  std::string head;  // wire_head of `body`; empty when that threw
  // What the record of each send keeps of the input exchange: its identity, labels and answer.
  std::uint64_t source_id = 0;
  std::string session_id;
  std::vector<Label> labels;
  std::optional<std::string> expected;
};

// One send of an input exchange. --requests sends an input exchange again and again: every copy
// shares its one PreparedRequest (a copy each cost ~600 bytes and a preparation per send:
// bench/RESULTS.md, session 10).
struct Prepared {
  std::size_t input_index = 0;
  std::size_t cycle = 0;  // --requests: how many earlier copies of this input exchange were prepared
  std::shared_ptr<const PreparedRequest> request;
};

// The wire form of a request up to its body (the request line, the headers and, for a body or
// a POST, its Content-Length; keep-alive), as Beast serialises it. Throws what Beast throws for
// a request it cannot send.
std::string wire_head(const PreparedRequest& prepared, std::string_view body);
// `head` (a wire_head) with X-Retrace-Probe: 1 added (net/http_rules.hpp): a request that is not
// part of the measured run (a --warmup request), which `retrace record` keeps out of its trace.
std::string marked_as_probe(std::string_view head);

// One session's requests (a single request without --sessions), run one after the other.
struct Chain {
  std::vector<std::size_t> items;        // indices into the prepared list, in session order
  std::vector<std::int64_t> offsets_ns;  // recorded timing: each item's intended offset
  std::int64_t start_ns = 0;             // open loop / recorded: the first item's intended offset
};

// The method an input exchange is sent with (POST when it names none). Throws
// std::invalid_argument naming the exchange for one Beast does not know.
boost::beast::http::verb method_of(const Exchange& source);

// One input exchange as it will be sent (what prepare_requests does to each), for a run that
// prepares as it goes (replay/feed.hpp). Thread-safe: const; what it keeps between requests (the
// last frame) is behind a mutex.
class Preparer {
 public:
  Preparer(const Options& options, const Preflight& checked);
  // Throws std::invalid_argument as prepare_requests does.
  std::shared_ptr<const PreparedRequest> operator()(const Exchange& source) const;

  // What preparing makes of a request's recorded method, target and headers (and whether it has
  // a body): the same for most requests of a trace (one client's), so worked out once and kept
  // while the next request's are equal — the headers as sent and as recorded, the wire syntax
  // check, the wire head up to its Content-Length (taken from the frame's first request). Reading
  // and preparing a request went from 3.8 to 2.5 µs (bench/RESULTS.md, "Issue 44, the
  // non-streamed row"); a request whose headers are its own pays ~0.25 µs for a frame not reused.
  struct Frame;

 private:
  // `kept`: with what made_of compares (else only what this request uses).
  std::shared_ptr<Frame> make_frame(const Exchange& source, bool kept) const;
  // Of what made_of compares; equal for equal frames.
  static std::uint64_t frame_hash(const Exchange& source);

  const Options& options_;
  const Preflight& checked_;
  std::unordered_set<std::string> overridden_;  // header names --header and --api-key set
  BodyEdits edits_;                              // what every body gets (request_body.hpp)
  mutable std::mutex mutex_;
  mutable std::shared_ptr<const Frame> last_;  // the last frame kept
  mutable std::uint64_t last_hash_ = 0;        // the last request's frame_hash
};

// The chosen input exchanges as they will be sent to `checked.url`: hop-by-hop and recorded
// secret headers dropped, Accept-Encoding limited to the codings replay decodes, --header and
// --api-key added; on the body the preflight's model (on OpenAI-style inference bodies),
// token-id fields and streaming, then --unset and --set, from one parse (replay/request_body.hpp
// says the order and what bytes are kept). Throws
// std::invalid_argument naming the exchange for an unknown method or a --set that cannot apply.
std::vector<Prepared> prepare_requests(const LoadedTrace& input,
                                       const std::vector<std::size_t>& chosen,
                                       const Options& options, const Preflight& checked);

// The prepared requests as chains, with the schedule's start times (rate: the arrival process;
// recorded: the trace's clock from --window-from (else from the earliest chosen), divided by
// --speed, gaps capped by --max-idle-gap, sorted by start). Copies made by --requests are chains
// of their own (a session's copy is a new session).
std::vector<Chain> make_chains(const LoadedTrace& input, const std::vector<Prepared>& prepared,
                               const Options& options);
// The same over the input's candidates (what a plan keeps: replay/planner.hpp); only each
// prepared item's input_index and cycle are read. `left_out` as select_candidates takes it.
std::vector<Chain> make_chains(const std::vector<Candidate>& input, const std::vector<Prepared>& prepared,
                               const Options& options, const LeftOut* left_out = nullptr);

// Throws std::invalid_argument when the schedule cannot be laid out for the exchanges `options`
// selects (an arrival past int64 nanoseconds, ...): the preflight checks it before any network.
void check_schedule(const LoadedTrace& input, const Options& options);

}  // namespace retrace::replay
