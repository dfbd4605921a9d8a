#include "format/header.hpp"

#include <unistd.h>

#include <array>
#include <chrono>

namespace retrace {

std::string host_name() {
  std::array<char, 256> name{};
  if (::gethostname(name.data(), name.size() - 1) != 0) return "";
  return name.data();
}

TraceHeader new_trace_header(Source source, std::string tool_version, std::string target,
                             std::string settings, const Clock& clock) {
  TraceHeader header;
  header.tool_version = std::move(tool_version);
  header.created_unix_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                               clock.wall().time_since_epoch())
                               .count();
  header.source = source;
  header.target = std::move(target);
  header.settings = std::move(settings);
  header.host = host_name();
  return header;
}

}  // namespace retrace
