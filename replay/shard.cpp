// --start-at and what a sharded run records: see replay/shard.hpp.
#include "replay/shard.hpp"

#include <chrono>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <stdexcept>

#include "base/splitmix.hpp"
#include "base/time.hpp"

namespace retrace::replay {

namespace {

std::invalid_argument bad_start(std::string_view text, const std::string& why) {
  return std::invalid_argument("--start-at '" + std::string(text) + "': " + why +
                               " (expected RFC 3339 with a zone, e.g. 2026-12-01T10:00:00Z or "
                               "2026-12-01T11:00:00.5+01:00, or epoch seconds, e.g. 1764583200.5)");
}

std::int64_t parse_epoch(std::string_view text) {
  std::size_t at = 0;
  while (at < text.size() && std::isdigit(static_cast<unsigned char>(text[at]))) ++at;
  if (at == 0 || at > 11) throw bad_start(text, "not a time");
  std::int64_t seconds = 0;
  std::from_chars(text.data(), text.data() + at, seconds);
  std::int64_t ns = 0;
  try {
    ns = parse_fraction_ns(text, at);
  } catch (const std::invalid_argument& e) {
    throw bad_start(text, e.what());
  }
  if (at != text.size()) throw bad_start(text, "unexpected '" + std::string(text.substr(at)) + "'");
  return seconds * 1'000'000'000 + ns;
}

// A digest step with good avalanche, the same on every platform: hash_combine's spread, then
// splitmix64's finaliser.
std::uint64_t mix(std::uint64_t state, std::uint64_t value) {
  return splitmix64_finalise(state ^ (value + kSplitmixGamma + (state << 6) + (state >> 2)));
}

}  // namespace

std::int64_t parse_start_at(std::string_view text) {
  if (text.empty()) throw bad_start(text, "empty");
  if (text.size() >= 10 && text[4] == '-') {
    try {
      return parse_rfc3339(text);
    } catch (const std::invalid_argument& e) {
      throw bad_start(text, e.what());
    }
  }
  return parse_epoch(text);
}

void check_start_at(std::int64_t start_at_ns, std::int64_t now_ns) {
  if (now_ns - start_at_ns <= kStartAtToleranceNs) return;
  double late_s = static_cast<double>(now_ns - start_at_ns) / 1e9;
  char late[32];
  std::snprintf(late, sizeof late, "%.3f", late_s);
  throw std::invalid_argument("--start-at " + format_rfc3339(start_at_ns) + " is " + late +
                              " s in the past (more than 1 s late, and a late shard would race "
                              "through its backlog); give a time far enough ahead for every shard "
                              "to load the trace, e.g. --start-at $(( $(date +%s) + 30 ))");
}

void InputIdentity::add(const Exchange& exchange) {
  ++exchanges_;
  keys_ = mix(mix(keys_, exchange.key.hi), exchange.key.lo);
}

metrics::TraceIdentity InputIdentity::identity(std::int64_t created_unix_ns) const {
  // Every key in order, then the count: a fold that a streamed input computes as it reads.
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(mix(keys_, exchanges_)));
  return {exchanges_, created_unix_ns, hex};
}

metrics::TraceIdentity input_identity(const LoadedTrace& input) {
  InputIdentity identity;
  for (const auto& exchange : input.exchanges) identity.add(exchange);
  return identity.identity(input.header.created_unix_ns);
}

void add_shard_facts(metrics::RunSettings& settings, const ShardFacts& facts) {
  settings.input_identity = facts.input_identity;
  settings.selected = facts.selected;
  settings.host = facts.host;
  if (facts.start_at_ns) {
    settings.start_at = format_rfc3339(*facts.start_at_ns);
    settings.start_at_unix_ns = *facts.start_at_ns;
  }
  settings.clock_offset_ns = facts.clock_offset_ns;
}

}  // namespace retrace::replay
