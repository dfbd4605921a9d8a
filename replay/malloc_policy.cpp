// See replay/malloc_policy.hpp.
#include "replay/malloc_policy.hpp"

#include <malloc.h>

namespace retrace::replay {

// One malloc arena for every thread of the run: glibc gives each new thread an arena of its
// own, and each --repeat pass (or sweep level) starts new worker and writer threads, whose
// freed memory stayed resident and fragmented there: RSS crept ~370 KiB a pass even after
// malloc_trim. Set before the first thread asks for an arena (glibc reads the cap then); its
// cost in client CPU per request is in bench/RESULTS.md ("replay's memory across --repeat").
//
// And a fixed mmap threshold (issue 44 item 4): glibc's own moves up to the largest block freed
// so far (a 16,000-token stream's decoded events are one ~8 MB block), and its trim threshold to
// twice that, so that once a long exchange was written the next ones came from the heap and up
// to twice the largest stayed resident, freed: ~15 MiB, 15 bytes a token in flight at -c 64.
// Above kMmapBytes a block is mapped and given back when freed (a long exchange's pages are
// faulted in again: bench/RESULTS.md, "One long exchange decoded at a time"); a request of a
// usual size (256 tokens with logprobs is ~100 KB) stays on the heap as before.
void use_run_malloc_policy() {
  constexpr int kMmapBytes = 1 << 20;
  static const bool one_arena = ::mallopt(M_ARENA_MAX, 1) == 1;
  static const bool fixed_mmap = ::mallopt(M_MMAP_THRESHOLD, kMmapBytes) == 1;
  (void)one_arena;
  (void)fixed_mmap;
}

}  // namespace retrace::replay
