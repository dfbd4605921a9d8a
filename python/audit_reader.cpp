#include "python/audit_reader.hpp"

#include <charconv>
#include <cmath>
#include <string>

#include "python/columns.hpp"

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

SamplingAsSent sampling_as_sent(const std::array<JsonSlot, 5>& fields) {
  return {real_of(fields[0]), real_of(fields[1]), integer_of(fields[2]), integer_of(fields[3]), integer_of(fields[4])};
}

SamplingAsSent audited_sampling(std::string_view body) {
  const sweep::ExchangeAudit audit = sweep::AuditReader().body(body);
  return {number_of(audit.temperature), number_of(audit.top_p), integer_of(audit.top_k), integer_of(audit.seed),
          integer_of(audit.n)};
}

}  // namespace retrace::python
