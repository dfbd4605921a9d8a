// Stamping a new trace's header: record, replay and import make their headers here, so every
// trace says the same things about its making.
#pragma once

#include <string>

#include "base/clock.hpp"
#include "format/trace.hpp"

namespace retrace {

// A header for a trace made now on this machine: the writer's format version, `tool_version`, the
// creation time (`clock`'s wall time), this host's name, and what made it (source, target,
// settings).
TraceHeader new_trace_header(Source source, std::string tool_version, std::string target,
                             std::string settings, const Clock& clock);

// This machine's host name, "" when the system does not say.
std::string host_name();

}  // namespace retrace
