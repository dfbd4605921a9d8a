// Which exchanges a replay sends, and the trace's own clock: filters, the time window, the session
// sample, shards, --limit and --requests (the order is in replay/replay.hpp); idle-gap capping.
#include <fnmatch.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <ostream>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "replay/replay.hpp"

namespace retrace::replay {

namespace {

bool glob_match(const std::string& pattern, const std::string& text) {
  return ::fnmatch(pattern.c_str(), text.c_str(), 0) == 0;
}

// fnmatch reads a '[' with no ']' after it as a literal '[', so `path:[` matched no request and
// the replay sent nothing without a word: an unclosed class is refused instead. Where the class
// opened, or npos when every one closes.
std::size_t unclosed_class(std::string_view glob) {
  for (std::size_t i = 0; i < glob.size(); ++i) {
    if (glob[i] == '\\') {
      ++i;
      continue;
    }
    if (glob[i] != '[') continue;
    std::size_t end = i + 1;
    if (end < glob.size() && (glob[end] == '!' || glob[end] == '^')) ++end;
    if (end < glob.size() && glob[end] == ']') ++end;  // a leading ']' is a member
    end = glob.find(']', end);
    if (end == std::string_view::npos) return i;
    i = end;
  }
  return std::string_view::npos;
}

}  // namespace

void validate_filter(std::string_view filter) {
  auto colon = filter.find(':');
  auto kind = filter.substr(0, colon);
  if (colon == std::string_view::npos || (kind != "path" && kind != "label" && kind != "session"))
    throw std::invalid_argument("bad --filter '" + std::string(filter) +
                                "': use path:GLOB, label:KEY=GLOB or session:GLOB");
  if (kind == "label" && filter.find('=', colon) == std::string_view::npos)
    throw std::invalid_argument("bad --filter '" + std::string(filter) +
                                "': a label filter is label:KEY=GLOB");
  auto glob = filter.substr(kind == "label" ? filter.find('=', colon) + 1 : colon + 1);
  if (auto at = unclosed_class(glob); at != std::string_view::npos)
    throw std::invalid_argument("bad --filter '" + std::string(filter) + "': the '[' at character " +
                                std::to_string(glob.data() + at - filter.data() + 1) +
                                " opens a character class that no ']' closes; write \\[ for a "
                                "literal '['");
}

bool matches_filter(const Exchange& exchange, std::string_view filter) {
  auto colon = filter.find(':');
  auto kind = filter.substr(0, colon);
  auto pattern = filter.substr(colon + 1);
  if (kind == "path") {
    auto target = std::string_view(exchange.request.target);
    auto path = target.substr(0, target.find('?'));
    return glob_match(std::string(pattern), std::string(path));
  }
  if (kind == "session") return glob_match(std::string(pattern), exchange.session_id);
  if (kind == "label") {
    auto eq = pattern.find('=');
    auto* value = exchange.label(pattern.substr(0, eq));
    return value && glob_match(std::string(pattern.substr(eq + 1)), *value);
  }
  return false;
}

void TraceClock::add(const Candidate& candidate) {
  have_offsets_ = have_offsets_ || candidate.actual_send_ns != 0;
  earliest_offset_ = std::min(earliest_offset_, candidate.actual_send_ns);
  earliest_start_ = std::min(earliest_start_, candidate.start_unix_ns);
}

std::int64_t TraceClock::offset(std::int64_t actual_send_ns, std::int64_t start_unix_ns) const {
  return have_offsets_ ? actual_send_ns - earliest_offset_ : start_unix_ns - earliest_start_;
}

std::vector<std::int64_t> trace_clock_ns(const std::vector<Candidate>& input, const TraceClock* whole) {
  TraceClock own;
  if (!whole) {
    for (const auto& c : input) own.add(c);
    whole = &own;
  }
  std::vector<std::int64_t> clock;
  clock.reserve(input.size());
  for (const auto& c : input) clock.push_back(whole->offset(c.actual_send_ns, c.start_unix_ns));
  return clock;
}

std::vector<std::int64_t> trace_clock_ns(const std::vector<Exchange>& exchanges) {
  return trace_clock_ns(candidates_of(exchanges, {}));
}

bool session_sampled(std::string_view key, double fraction, std::uint64_t seed) {
  if (fraction >= 1) return true;
  std::uint64_t hash = 0xcbf29ce484222325ull;  // FNV-1a
  for (unsigned char c : key) hash = (hash ^ c) * 0x100000001b3ull;
  std::uint64_t z = hash + seed * 0x9e3779b97f4a7c15ull;  // splitmix64 finaliser
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-53 < fraction;
}

void cap_idle_gaps(std::vector<std::int64_t>& offsets, std::int64_t gap) {
  std::vector<std::int64_t> distinct(offsets);
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  std::vector<std::int64_t> capped(distinct.size());
  std::int64_t previous_old = 0, previous_new = 0;
  for (std::size_t i = 0; i < distinct.size(); ++i) {
    previous_new += std::min(distinct[i] - previous_old, gap);
    previous_old = distinct[i];
    capped[i] = previous_new;
  }
  for (auto& offset : offsets)
    offset = capped[std::lower_bound(distinct.begin(), distinct.end(), offset) - distinct.begin()];
}

void validate_trace_controls(const Options& options) {
  if (options.window_from && options.window_from->count() < 0)
    throw std::invalid_argument("--window-from must not be negative");
  if (options.window_from && options.window_to && *options.window_to <= *options.window_from)
    throw std::invalid_argument("--window-to must be after --window-from (the window is [from, to))");
  if (options.max_idle_gap) {
    if (options.max_idle_gap->count() < 0)
      throw std::invalid_argument("--max-idle-gap must not be negative");
    if (options.schedule.kind != ScheduleKind::recorded)
      throw std::invalid_argument("--max-idle-gap shortens the recorded clock: use it with "
                                  "--timing recorded (or sweep --speed)");
  }
  if (options.sample_sessions && !(*options.sample_sessions > 0 && *options.sample_sessions <= 1))
    throw std::invalid_argument("--sample-sessions must be a fraction above 0 and at most 1, e.g. 0.1");
  if (options.requests) {
    if (*options.requests == 0) throw std::invalid_argument("--requests must be at least 1");
    if (options.schedule.kind == ScheduleKind::recorded)
      throw std::invalid_argument("--requests cycles the trace, and the recorded clock does not "
                                  "repeat: use -c N or --rate R with it");
  }
  if (options.duration && options.duration->count() <= 0)
    throw std::invalid_argument("--duration must be above 0");
}

namespace {

// Requests record rejected itself (400/413/431 answered by record) never reached a server.
bool rejected(const Exchange& exchange) { return exchange.error.kind == ErrorKind::rejected; }

}  // namespace

Candidate candidate_of(const Exchange& exchange, const Options& options) {
  Candidate candidate;
  candidate.eligible = !rejected(exchange) &&
                       std::all_of(options.filters.begin(), options.filters.end(),
                                   [&](const std::string& f) { return matches_filter(exchange, f); });
  candidate.id = exchange.id;
  candidate.session = exchange.session_id;
  candidate.actual_send_ns = exchange.actual_send_ns;
  candidate.start_unix_ns = exchange.start_unix_ns;
  return candidate;
}

std::vector<Candidate> candidates_of(const std::vector<Exchange>& exchanges, const Options& options) {
  std::vector<Candidate> candidates;
  candidates.reserve(exchanges.size());
  for (const auto& exchange : exchanges) candidates.push_back(candidate_of(exchange, options));
  return candidates;
}

std::size_t rejected_by_record(const std::vector<Exchange>& exchanges) {
  return static_cast<std::size_t>(std::count_if(exchanges.begin(), exchanges.end(), rejected));
}

std::function<bool(const Exchange&)> enough_input(const Options& options) {
  if (!options.limit || !options.filters.empty() || options.window_from || options.window_to ||
      options.sample_sessions || options.shard_count > 1 || options.start_at_unix_ns)
    return {};
  return [limit = *options.limit, sendable = std::size_t{0}](const Exchange& exchange) mutable {
    if (!rejected(exchange)) ++sendable;
    return sendable >= limit;
  };
}

void check_readable(const std::string& path, const Recovery& recovery, std::size_t exchanges,
                    std::ostream& warnings, std::string_view prefix) {
  if (!recovery.clean())
    warnings << prefix << ": warning: " << path << ": " << describe(recovery) << "; replaying the "
             << exchanges << " readable exchanges\n";
  if (exchanges == 0) throw std::invalid_argument(path + " holds no exchanges to replay");
}

LoadedTrace load_input(const std::string& path, const Options& options, std::ostream& warnings,
                       std::string_view prefix) {
  auto input = load_requests(path, {}, enough_input(options));
  check_readable(path, input.recovery, input.exchanges.size(), warnings, prefix);
  return input;
}

Selection::Selection(const Options& options, bool by_session)
    : options_(options), by_session_(by_session) {
  for (const auto& filter : options.filters) validate_filter(filter);
  validate_trace_controls(options);
}

bool Selection::take(const Exchange& exchange, bool in_window) {
  return !full() && take(candidate_of(exchange, options_), in_window);
}

bool Selection::take(const Candidate& candidate, bool in_window) {
  ++offered_;
  if (candidate.eligible) ++matched_;
  if (full() || !candidate.eligible || !in_window) return false;
  if (options_.sample_sessions) {
    auto key = candidate.session.empty() ? "#" + std::to_string(candidate.id) : std::string(candidate.session);
    if (!session_sampled(key, *options_.sample_sessions, options_.seed)) return false;
  }
  std::size_t shard_key;
  if (by_session_ && !candidate.session.empty()) {
    auto [it, inserted] = session_ordinal_.try_emplace(std::string(candidate.session), position_);
    if (inserted) ++position_;
    shard_key = it->second;
  } else {
    shard_key = position_++;
  }
  if (shard_key % options_.shard_count != options_.shard_index) return false;
  ++taken_;
  return true;
}

bool Selection::full() const { return options_.limit && taken_ >= *options_.limit; }

void Selection::check_filters_matched() const {
  if (options_.filters.empty() || matched_ > 0 || offered_ == 0) return;
  std::string filters;
  for (const auto& filter : options_.filters) filters += (filters.empty() ? "" : " ") + ("--filter " + filter);
  throw std::invalid_argument(filters + " matched none of the " + std::to_string(offered_) + " exchanges" +
                              (options_.filters.size() > 1 ? " (an exchange must match every --filter)" : "") +
                              "; `retrace cat` shows their paths, labels and sessions");
}

std::vector<std::size_t> select_exchanges(const std::vector<Exchange>& exchanges,
                                          const Options& options, bool by_session) {
  return select_candidates(candidates_of(exchanges, options), options, by_session);
}

namespace {

// select_candidates lays its requests out (a loaded or planned run), and --warmup's with them:
// refused past the bound before anything is allocated (replay/replay.hpp, kMaxLaidOutRequests).
void check_laid_out(const Options& options) {
  auto refuse = [](std::string_view flag, std::size_t count) {
    throw std::invalid_argument(
        std::string(flag) + " " + std::to_string(count) + " is above the " +
        std::to_string(kMaxLaidOutRequests) + " requests a run lays out before it starts (about 130 "
        "bytes each): sessions, a time window, recorded timing, sweep, bisect and study plan every "
        "request first. Give fewer, or replay without --sessions and a time window, which reads "
        "its requests as it sends them and takes any number");
  };
  if (options.requests && *options.requests > kMaxLaidOutRequests) refuse("--requests", *options.requests);
  if (options.warmup > kMaxLaidOutRequests) refuse("--warmup", options.warmup);
}

}  // namespace

std::vector<std::size_t> select_candidates(const std::vector<Candidate>& input, const Options& options,
                                           bool by_session, const LeftOut* left_out) {
  check_laid_out(options);
  Selection selection(options, by_session);
  if (left_out) selection.left_out(left_out->exchanges, left_out->matched);
  bool windowed = options.window_from || options.window_to;
  std::vector<std::int64_t> clock;
  // A session is kept or left whole, by its first turn's offset.
  std::unordered_map<std::string_view, std::int64_t> session_start;
  if (windowed) {
    clock = trace_clock_ns(input, left_out ? &left_out->clock : nullptr);
    for (std::size_t i = 0; i < input.size(); ++i) {
      if (input[i].session.empty()) continue;
      auto [it, inserted] = session_start.try_emplace(input[i].session, clock[i]);
      if (!inserted) it->second = std::min(it->second, clock[i]);
    }
  }
  auto in_window = [&](std::size_t i) {
    if (!windowed) return true;
    std::int64_t at = input[i].session.empty() ? clock[i] : session_start.at(input[i].session);
    if (options.window_from && at < options.window_from->count()) return false;
    if (options.window_to && at >= options.window_to->count()) return false;
    return true;
  };

  std::vector<std::size_t> chosen;
  for (std::size_t i = 0; i < input.size() && !selection.full(); ++i)
    if (selection.take(input[i], in_window(i))) chosen.push_back(i);
  selection.check_filters_matched();
  if (options.requests && !chosen.empty()) {
    auto selected = chosen.size();
    chosen.resize(*options.requests);
    for (std::size_t i = selected; i < chosen.size(); ++i) chosen[i] = chosen[i % selected];
  }
  return chosen;
}

}  // namespace retrace::replay
