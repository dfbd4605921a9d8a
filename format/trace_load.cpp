// Whole traces into memory: load_trace, and load_requests for what replay sends again.
#include <utility>

#include "format/trace.hpp"

namespace retrace {

namespace {

// One loop for both: with `requests_only`, each exchange's response and its decoding (events,
// choices, usage: the bulk of a recording) are dropped as it is read; everything else is kept,
// so a new field of the request side, or the error a selection reads, is never lost by omission.
LoadedTrace load(const std::filesystem::path& path, ReaderOptions options, bool requests_only) {
  TraceReader reader(path, options);
  LoadedTrace loaded;
  loaded.header = reader.header();
  Exchange exchange;
  while (reader.next(exchange)) {
    if (requests_only) {
      exchange.response = {};
      exchange.choices = {};
      exchange.usage = {};
    }
    loaded.exchanges.push_back(std::move(exchange));
    exchange = {};
  }
  if (requests_only) loaded.exchanges.shrink_to_fit();
  loaded.recovery = reader.recovery();
  return loaded;
}

}  // namespace

LoadedTrace load_trace(const std::filesystem::path& path, ReaderOptions options) {
  return load(path, options, false);
}

LoadedTrace load_requests(const std::filesystem::path& path, ReaderOptions options) {
  return load(path, options, true);
}

}  // namespace retrace
