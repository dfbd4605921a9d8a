// `retrace shadow`: record's proxy in front of a primary, with every recorded request mirrored off
// the client's path to a candidate and, when given, a control (a second replica of the primary's
// deployment: its differences from the primary are the noise floor). The client is answered by
// the primary, byte for byte as through `record` (the same run_recorder, with its hooks).
//
// The trace: DIR holds one segment set per leg, DIR/primary/, DIR/control/ and DIR/candidate/,
// each written as `record --out DIR/` writes one, so every reader that reads a segment set reads a
// leg; the mirrored exchange carries its primary exchange's request key (the body as the client
// sent it) and the leg is the directory it is in. DIR/shadow.json names the legs and their URLs;
// `retrace diff DIR` reads it as baseline = primary, runs = control and candidate (shadow_legs()).
// A leg per directory needs no new trace field, so readers that predate shadow read each leg.
//
// While it runs, DIR/summary.json and DIR/summary.md are rewritten atomically every
// --report-every, and the admin endpoint's /metrics adds the verdict (summary.hpp).
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "diff/diff.hpp"
#include "record/record.hpp"
#include "shadow/summary.hpp"

namespace retrace::shadow {

struct ShadowOptions {
  // The proxy in front of the primary: upstream = --primary, listen, sample, admin endpoint,
  // duration, limits, redaction. Its `out` and hooks are set by run_shadow.
  record::RecordOptions proxy;
  std::filesystem::path out;  // DIR
  net::Url candidate;
  std::optional<net::Url> control;
  std::vector<HttpHeader> candidate_headers, control_headers;  // credentials, values resolved
  std::size_t mirror_queue = 1024;
  unsigned mirror_concurrency = 64;
  std::uint64_t max_pairs = 0;  // 0: no limit
  std::chrono::milliseconds report_every{10'000};
  std::optional<double> fail_if_excess;
  // Each mirror leg's /metrics into its trace (shadow/leg_scrape.hpp), as proxy.scrape is the
  // primary's: --scrape-interval, --control-scrape-url, --candidate-scrape-url.
  net::ScrapeSettings control_scrape, candidate_scrape;
  diff::Options diff;
};

// Throws std::invalid_argument when two legs name the same server (a candidate equal to the
// primary would compare the primary with itself).
void check_legs(const ShadowOptions& options);

struct ShadowResult {
  record::RecordSummary primary;
  Verdict verdict;
  RunFacts facts;
  bool gate_failed = false;
};

ShadowResult run_shadow(const ShadowOptions& options,
                        const std::function<void(const std::string&)>& on_listening, std::ostream& log,
                        const Clock& clock);

// A shadow run's directory: where each leg's segments are.
std::filesystem::path leg_directory(const std::filesystem::path& dir, Leg leg);
struct ShadowLegs {
  std::filesystem::path primary;
  std::vector<std::pair<std::string, std::filesystem::path>> runs;  // control (if any), candidate
};
// The legs of `dir` when it is a shadow run's directory (it holds shadow.json), else nullopt.
std::optional<ShadowLegs> shadow_legs(const std::filesystem::path& dir);

}  // namespace retrace::shadow
