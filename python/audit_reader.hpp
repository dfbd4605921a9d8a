// What exchanges() shows of sweep/'s study audit (sweep::AuditReader: the sampling as sent and the
// cached tokens, the one reading `study` makes of a body and a response): each sampling field as
// a column's value. A float column the number (NaN when absent, not a number or not finite), an
// integer column the number when it is a whole one within int64 (else absent): what the audit's
// JSON text of the field reads back as, which tests/python/test_audit_reader.py checks
// (audited_sampling).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

#include "sweep/study.hpp"

namespace retrace::python {

struct SamplingAsSent {
  double temperature, top_p;
  std::optional<std::int64_t> top_k, seed, n;
};

// From AuditReader::sampling's values.
SamplingAsSent sampling_as_sent(const std::array<JsonSlot, 5>& fields);
// From the audit's JSON text of them (AuditReader::body), the long way.
SamplingAsSent audited_sampling(std::string_view body);

}  // namespace retrace::python
