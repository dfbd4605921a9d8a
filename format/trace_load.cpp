// Whole traces into memory: load_trace, and load_requests for what replay sends again.
#include <iterator>
#include <utility>

#include "format/trace.hpp"

namespace retrace {

namespace {

// How many exchanges are read in place before the next block is started (about 2 MiB of
// Exchange structs; their strings live elsewhere).
constexpr std::size_t kBlockExchanges = 4096;

// One loop for both: with `requests_only`, each exchange's response and its decoding (events,
// choices, usage: the bulk of a recording) are not read (TraceReader::next_request); everything
// else is, so a new field of the request side, or the error a selection reads, is never lost by
// omission.
//
// The count is known only at the end (the index is in the trailer), so exchanges are read in
// place into blocks of a fixed size and moved once into a vector of the exact size. A vector
// grown one exchange at a time moved every exchange again at each doubling, and once more to
// shrink it: ~30 % of a 200,000-request replay's start-up (bench/RESULTS.md, replay, session 8).
LoadedTrace load(const std::filesystem::path& path, ReaderOptions options, bool requests_only,
                 const std::function<bool(const Exchange&)>& enough) {
  TraceReader reader(path, options);
  LoadedTrace loaded;
  loaded.header = reader.header();
  std::vector<std::vector<Exchange>> blocks;
  std::size_t count = 0;
  while (true) {
    if (blocks.empty() || blocks.back().size() == kBlockExchanges)
      blocks.emplace_back().reserve(kBlockExchanges);
    auto& block = blocks.back();
    Exchange& exchange = block.emplace_back();
    if (!(requests_only ? reader.next_request(exchange) : reader.next(exchange))) {
      block.pop_back();
      break;
    }
    ++count;
    if (enough && enough(exchange)) break;
  }
  if (blocks.size() == 1) {
    loaded.exchanges = std::move(blocks.front());
  } else {
    loaded.exchanges.reserve(count);
    for (auto& block : blocks) {
      std::move(block.begin(), block.end(), std::back_inserter(loaded.exchanges));
      block = {};  // freed as the result fills: the peak is about one block above it
    }
  }
  loaded.recovery = reader.recovery();
  return loaded;
}

}  // namespace

LoadedTrace load_trace(const std::filesystem::path& path, ReaderOptions options) {
  return load(path, options, false, {});
}

LoadedTrace load_requests(const std::filesystem::path& path, ReaderOptions options) {
  return load(path, options, true, {});
}

LoadedTrace load_requests(const std::filesystem::path& path, ReaderOptions options,
                          const std::function<bool(const Exchange&)>& enough) {
  return load(path, options, true, enough);
}

}  // namespace retrace
