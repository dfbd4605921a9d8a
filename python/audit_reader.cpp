#include "python/audit_reader.hpp"

#include <charconv>
#include <cmath>
#include <string>

#include "python/columns.hpp"
#include "sweep/study.hpp"

namespace retrace::python {

namespace {

// The audit's JSON text of a number read back as a double (json_text prints the shortest
// plain decimal that reads back to the same double, and null when not finite).
double real_of(const JsonSlot& slot) {
  switch (slot.kind) {
    case JsonSlot::int64: return static_cast<double>(slot.i);
    case JsonSlot::uint64: return static_cast<double>(slot.u);
    case JsonSlot::real: return std::isfinite(slot.d) ? slot.d : kNaN;
    default: return kNaN;
  }
}
// ... and as an int64: a whole double prints without a point (42.0 is "42").
std::optional<std::int64_t> integer_of(const JsonSlot& slot) {
  constexpr double kLimit = 9223372036854775808.0;  // 2^63
  if (slot.kind == JsonSlot::int64) return slot.i;
  if (slot.kind == JsonSlot::real && std::isfinite(slot.d) && std::trunc(slot.d) == slot.d && slot.d >= -kLimit &&
      slot.d < kLimit)
    return static_cast<std::int64_t>(slot.d);
  return std::nullopt;
}

double number_of(const std::optional<std::string>& text) {
  if (!text) return kNaN;
  double value = 0;
  auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), value);
  return ec == std::errc() && end == text->data() + text->size() ? value : kNaN;
}
std::optional<std::int64_t> integer_of(const std::optional<std::string>& text) {
  if (!text) return std::nullopt;
  std::int64_t value = 0;
  auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), value);
  if (ec == std::errc() && end == text->data() + text->size()) return value;
  return std::nullopt;
}

}  // namespace

SamplingAsSent SamplingReader::read(std::string_view body) {
  paths_.read(body);
  constexpr std::size_t kFields = 5, kScopes = 3;
  auto first = [&](std::size_t field) -> const JsonSlot& {  // the first scope that names it, not null
    for (std::size_t scope = 0; scope < kScopes; ++scope)
      if (paths_[scope * kFields + field].kind != JsonSlot::absent) return paths_[scope * kFields + field];
    return paths_[field];
  };
  return {real_of(first(0)), real_of(first(1)), integer_of(first(2)), integer_of(first(3)), integer_of(first(4))};
}

std::optional<std::int64_t> CachedTokensReader::cached_in(std::string_view text, bool& parsed, bool& exact) {
  parsed = paths_.read(text);
  for (std::size_t path = 0; path < 4; ++path) {
    const JsonSlot& slot = paths_[path];
    if (slot.kind == JsonSlot::int64) return slot.i;
    if (slot.kind == JsonSlot::uint64 || slot.kind == JsonSlot::real) {  // Boost.JSON's to_number decides
      exact = false;
      return std::nullopt;
    }
  }
  return std::nullopt;
}

// sweep::cached_tokens_of's walk over the response, each text read by cached_in.
std::optional<std::int64_t> CachedTokensReader::read(const Exchange& exchange) {
  bool parsed = false, exact = true;
  std::optional<std::int64_t> cached;
  if (!exchange.response.streamed) {
    cached = cached_in(exchange.response.body, parsed, exact);
  } else {
    const auto& events = exchange.response.events;
    for (std::size_t seen = 0, i = events.size(); i-- > 0 && seen < 4 && !cached && exact;) {
      std::string_view data = events[i].data;
      if (data.find("cache") == std::string_view::npos) {
        seen += data.find('{') != std::string_view::npos;
        continue;
      }
      cached = cached_in(data, parsed, exact);
      seen += parsed;
    }
  }
  return exact ? cached : sweep::cached_tokens_of(exchange);
}

SamplingAsSent audited_sampling(std::string_view body) {
  const sweep::ExchangeAudit audit = sweep::audit_body(body);
  return {number_of(audit.temperature), number_of(audit.top_p), integer_of(audit.top_k), integer_of(audit.seed),
          integer_of(audit.n)};
}

std::optional<std::int64_t> audited_cached_tokens(const Exchange& exchange) { return sweep::cached_tokens_of(exchange); }

}  // namespace retrace::python
