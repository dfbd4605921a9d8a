// See base/malloc_policy.hpp.
#include "base/malloc_policy.hpp"

#include <malloc.h>

namespace retrace {

void use_fixed_mmap_threshold() {
  constexpr int kMmapBytes = 1 << 20;
  static const bool fixed = ::mallopt(M_MMAP_THRESHOLD, kMmapBytes) == 1;
  (void)fixed;
}

// glibc reads the cap when a thread first asks for an arena: set it before the first thread starts.
void use_one_malloc_arena() {
  static const bool one = ::mallopt(M_ARENA_MAX, 1) == 1;
  (void)one;
}

}  // namespace retrace
