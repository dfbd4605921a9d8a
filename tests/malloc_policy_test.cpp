// base/malloc_policy.hpp: with the fixed mmap threshold, a block above 1 MiB is mapped however
// large a block was freed before it, so freeing it gives its pages back (glibc's own threshold
// rises to the largest block freed, and the next such block then comes from the heap and stays
// resident once freed). A binary of its own: the policy is process-wide.
#include <catch2/catch.hpp>

#include <malloc.h>

#include <cstdlib>
#include <cstring>

#include "base/malloc_policy.hpp"

// Not built under the sanitizers (tests/CMakeLists.txt): their malloc is not glibc's.
namespace {

// Whether a block of `bytes` is mapped (glibc counts mapped blocks in use in hblks).
bool mapped(std::size_t bytes) {
  const std::size_t before = ::mallinfo2().hblks;
  void* block = std::malloc(bytes);
  REQUIRE(block != nullptr);
  std::memset(block, 1, bytes);
  const bool was = ::mallinfo2().hblks == before + 1;
  std::free(block);
  return was;
}

}  // namespace

TEST_CASE("With the fixed mmap threshold a block of 2 MiB is mapped even after a block of 8 MiB was freed") {
  // glibc's default first: a mapped 8 MiB block freed moves the threshold above 2 MiB.
  REQUIRE(mapped(8u << 20));
  CHECK_FALSE(mapped(2u << 20));
  ::malloc_trim(0);  // that 2 MiB, freed at the heap's top, would serve the next one
  retrace::use_fixed_mmap_threshold();
  CHECK(mapped(8u << 20));
  CHECK(mapped(2u << 20));
  CHECK(mapped((1u << 20) + 4096));
  CHECK_FALSE(mapped(256u << 10));  // a usual request's block stays on the heap
}
