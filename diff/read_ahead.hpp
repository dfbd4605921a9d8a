// Internal to diff/: an exchange source read ahead on a thread of its own, in batches, so that
// decoding one trace overlaps the work on another: lockstep reads two traces side by side, and
// with each read ahead the two decode on two cores.
#pragma once

#include <memory>

#include "diff/diff.hpp"

namespace retrace::diff {

// Reads `inner` (which must outlive the result) ahead by a few batches of exchanges. An error
// reading it (TraceError) is thrown from next(), as `inner` would have thrown it.
std::unique_ptr<ExchangeSource> read_ahead(ExchangeSource& inner);

}  // namespace retrace::diff
