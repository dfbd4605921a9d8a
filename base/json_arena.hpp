// The project's one rule for reused JSON arenas: a fresh boost::json::monotonic_resource over the
// same scratch buffer for every parse.
//
// Why not monotonic_resource::release(): in Boost 1.81 it frees the blocks allocated past the
// initial buffer but keeps the grown size of the next block. Every parse that overflows the
// buffer then allocates a block twice the size of the last one, so a reader reused over a few
// dozen bodies larger than its scratch asks for tens of gigabytes and fails with bad_alloc (seen
// as replay's preflight dying on 25 chat bodies of 5.6 KB, and as non-streamed answers lost after
// the 20th). A new resource starts its block sizes from the scratch again; the blocks the last
// parse allocated are freed with the old one.
//
// Lifetime: every value parsed into the previous storage must be dead before fresh() is called
// again (as with release()). Use it only for a parser reused across many inputs; a parse that
// makes its own local resource needs nothing of this.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>

#include <boost/json/monotonic_resource.hpp>
#include <boost/json/storage_ptr.hpp>

namespace retrace::llm {

class JsonArena {
 public:
  // The scratch is allocated by the first fresh(): a decoder made per exchange whose events all
  // take the SAX fast path never parses into it (16 KiB allocated per exchange for nothing was
  // 2.7 % of record's trace thread, bench/RESULTS.md "the floor").
  explicit JsonArena(std::size_t scratch_bytes) : scratch_bytes_(scratch_bytes) {}
  JsonArena(const JsonArena&) = delete;
  JsonArena& operator=(const JsonArena&) = delete;

  // Storage for one parse: a new resource over the scratch (the previous one, and every block it
  // allocated beyond the scratch, freed first).
  boost::json::storage_ptr fresh() {
    resource_.reset();
    if (!scratch_) scratch_.reset(new unsigned char[scratch_bytes_]);
    resource_.emplace(scratch_.get(), scratch_bytes_);
    return boost::json::storage_ptr(&*resource_);
  }

 private:
  std::unique_ptr<unsigned char[]> scratch_;
  std::size_t scratch_bytes_;
  std::optional<boost::json::monotonic_resource> resource_;  // refers to scratch_: declared after it
};

}  // namespace retrace::llm
