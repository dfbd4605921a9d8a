// The one bound on an exchange's parts (trace.hpp's Choice: each output of each choice, tool
// call, content block or embedding). llm's decoder makes at most this many, dropping the rest with
// a note; the trace reader reads at most this many of one record, saying how many it left out, so
// a trace of a few MB holding 10^6 small parts cannot cost export or diff gigabytes.
#pragma once

#include <cstddef>

namespace retrace {

inline constexpr std::size_t kMaxParts = 4096;

}  // namespace retrace
