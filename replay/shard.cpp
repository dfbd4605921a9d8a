// --start-at and what a sharded run records: see replay/shard.hpp.
#include "replay/shard.hpp"

#include <boost/json.hpp>
#include <chrono>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <stdexcept>

#include "base/time.hpp"

namespace retrace::replay {
namespace json = boost::json;

namespace {

std::invalid_argument bad_start(std::string_view text, const std::string& why) {
  return std::invalid_argument("--start-at '" + std::string(text) + "': " + why +
                               " (expected RFC 3339 with a zone, e.g. 2026-12-01T10:00:00Z or "
                               "2026-12-01T11:00:00.5+01:00, or epoch seconds, e.g. 1764583200.5)");
}


// Reads exactly `width` digits at `at`.
std::optional<unsigned> digits(std::string_view text, std::size_t at, std::size_t width) {
  if (at + width > text.size()) return std::nullopt;
  unsigned value = 0;
  for (std::size_t i = at; i < at + width; ++i) {
    if (!std::isdigit(static_cast<unsigned char>(text[i]))) return std::nullopt;
    value = value * 10 + static_cast<unsigned>(text[i] - '0');
  }
  return value;
}

// ".123456789..." at `at` -> nanoseconds (digits past the ninth are dropped); advances `at`.
std::int64_t fraction_ns(std::string_view text, std::size_t& at) {
  if (at >= text.size() || text[at] != '.') return 0;
  ++at;
  std::int64_t ns = 0, scale = 100'000'000;
  std::size_t start = at;
  while (at < text.size() && std::isdigit(static_cast<unsigned char>(text[at]))) {
    ns += (text[at] - '0') * scale;
    scale /= 10;
    ++at;
  }
  if (at == start) throw std::invalid_argument("a '.' with no digits after it");
  return ns;
}

std::int64_t parse_epoch(std::string_view text) {
  std::size_t at = 0;
  while (at < text.size() && std::isdigit(static_cast<unsigned char>(text[at]))) ++at;
  if (at == 0 || at > 11) throw bad_start(text, "not a time");
  std::int64_t seconds = 0;
  std::from_chars(text.data(), text.data() + at, seconds);
  std::int64_t ns = 0;
  try {
    ns = fraction_ns(text, at);
  } catch (const std::invalid_argument& e) {
    throw bad_start(text, e.what());
  }
  if (at != text.size()) throw bad_start(text, "unexpected '" + std::string(text.substr(at)) + "'");
  return seconds * 1'000'000'000 + ns;
}

std::int64_t parse_rfc3339(std::string_view text) {
  auto year = digits(text, 0, 4), month = digits(text, 5, 2), day = digits(text, 8, 2);
  auto hour = digits(text, 11, 2), minute = digits(text, 14, 2), second = digits(text, 17, 2);
  if (!year || !month || !day || !hour || !minute || !second || text[4] != '-' || text[7] != '-' ||
      (text[10] != 'T' && text[10] != 't' && text[10] != ' ') || text[13] != ':' || text[16] != ':')
    throw bad_start(text, "not YYYY-MM-DDTHH:MM:SS");
  if (*month < 1 || *month > 12) throw bad_start(text, "no month " + std::to_string(*month));
  auto days = days_from_civil(static_cast<int>(*year), *month, *day);
  if (!days) throw bad_start(text, "no such day in that month");
  if (*hour > 23 || *minute > 59 || *second > 60) throw bad_start(text, "no such time of day");
  std::size_t at = 19;
  std::int64_t ns = 0;
  try {
    ns = fraction_ns(text, at);
  } catch (const std::invalid_argument& e) {
    throw bad_start(text, e.what());
  }
  std::int64_t zone_s = 0;
  if (at < text.size() && (text[at] == 'Z' || text[at] == 'z')) {
    ++at;
  } else if (at < text.size() && (text[at] == '+' || text[at] == '-')) {
    auto zone_hour = digits(text, at + 1, 2), zone_minute = digits(text, at + 4, 2);
    if (!zone_hour || !zone_minute || text[at + 3] != ':' || *zone_hour > 23 || *zone_minute > 59)
      throw bad_start(text, "a zone is +HH:MM or -HH:MM");
    zone_s = (text[at] == '-' ? -1 : 1) * static_cast<std::int64_t>(*zone_hour * 3600 + *zone_minute * 60);
    at += 6;
  } else {
    throw bad_start(text, "no zone: end it with Z (UTC) or an offset such as +01:00");
  }
  if (at != text.size()) throw bad_start(text, "unexpected '" + std::string(text.substr(at)) + "'");
  // A leap second (:60) is read as the first instant of the next minute.
  std::int64_t seconds = *days * 86400 + *hour * 3600 + *minute * 60 + *second - zone_s;
  return seconds * 1'000'000'000 + ns;
}

// splitmix64's finaliser: a digest step with good avalanche, the same on every platform.
std::uint64_t mix(std::uint64_t state, std::uint64_t value) {
  std::uint64_t z = state ^ (value + 0x9e3779b97f4a7c15ull + (state << 6) + (state >> 2));
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace

std::int64_t parse_start_at(std::string_view text) {
  if (text.empty()) throw bad_start(text, "empty");
  if (text.size() >= 10 && text[4] == '-') return parse_rfc3339(text);
  return parse_epoch(text);
}

std::string format_rfc3339(std::int64_t unix_ns) {
  std::int64_t seconds = unix_ns / 1'000'000'000, ns = unix_ns % 1'000'000'000;
  if (ns < 0) ns += 1'000'000'000, seconds -= 1;
  std::int64_t days = seconds / 86400, rest = seconds % 86400;
  if (rest < 0) rest += 86400, days -= 1;
  const std::chrono::year_month_day date{std::chrono::sys_days{std::chrono::days{days}}};
  char text[64];
  std::snprintf(text, sizeof text, "%04d-%02u-%02uT%02lld:%02lld:%02lld.%09lldZ", int(date.year()),
                unsigned(date.month()), unsigned(date.day()), static_cast<long long>(rest / 3600),
                static_cast<long long>(rest / 60 % 60), static_cast<long long>(rest % 60),
                static_cast<long long>(ns));
  return text;
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

std::string InputIdentity::json(std::int64_t created_unix_ns) const {
  // Every key in order, then the count: a fold that a streamed input computes as it reads.
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(mix(keys_, exchanges_)));
  json::object identity;
  identity["exchanges"] = exchanges_;
  identity["created_unix_ns"] = created_unix_ns;
  identity["digest"] = hex;
  return json::serialize(identity);
}

std::string input_identity_json(const LoadedTrace& input) {
  InputIdentity identity;
  for (const auto& exchange : input.exchanges) identity.add(exchange);
  return identity.json(input.header.created_unix_ns);
}

std::string with_shard_facts(std::string_view settings, const ShardFacts& facts) {
  auto value = json::parse(settings);
  auto& object = value.as_object();
  object["input_identity"] = json::parse(facts.input_identity);
  object["selected"] = facts.selected;
  object["host"] = facts.host;
  if (facts.start_at_ns) {
    object["start_at"] = format_rfc3339(*facts.start_at_ns);
    object["start_at_unix_ns"] = *facts.start_at_ns;
  }
  if (facts.clock_offset_ns) object["clock_offset_ns"] = *facts.clock_offset_ns;
  return json::serialize(value);
}

}  // namespace retrace::replay
