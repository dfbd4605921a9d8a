// See replay/malloc_policy.hpp.
#include "replay/malloc_policy.hpp"

#include "base/malloc_policy.hpp"

namespace retrace::replay {

// One malloc arena for every thread of the run: each --repeat pass (or sweep level) starts new
// worker and writer threads, whose own arenas' freed memory stayed resident and fragmented: RSS
// crept ~370 KiB a pass even after malloc_trim. Its cost in client CPU per request is in
// bench/RESULTS.md ("replay's memory across --repeat").
//
// And a fixed mmap threshold (issue 44 item 4): at -c 64 with 16,000-token streams, glibc's moving
// one kept ~15 MiB of freed long exchanges resident, 15 bytes a token in flight (a long exchange's
// pages are faulted in again instead: bench/RESULTS.md, "One long exchange decoded at a time").
void use_run_malloc_policy() {
  use_one_malloc_arena();
  use_fixed_mmap_threshold();
}

}  // namespace retrace::replay
