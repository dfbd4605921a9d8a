// base/malloc_policy.hpp: with the fixed mmap threshold, a block above 1 MiB is mapped however
// large a block was freed before it, so freeing it gives its pages back (glibc's own threshold
// rises to the largest block freed, and the next such block then comes from the heap and stays
// resident once freed). A binary of its own: the policy is process-wide.
#include <catch2/catch.hpp>

#include <malloc.h>

#include <cstdlib>
#include <cstring>

#include "base/malloc_policy.hpp"

#if defined(__SANITIZE_ADDRESS__)  // GCC's; clang's is __has_feature(address_sanitizer)
#define RETRACE_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RETRACE_TEST_ASAN 1
#endif
#endif

#ifdef RETRACE_TEST_ASAN
// The ASan tier: malloc is the sanitizer's, which neither maps by glibc's threshold nor counts in
// mallinfo2, so there is nothing of glibc's to check.
TEST_CASE("Under AddressSanitizer malloc is the sanitizer's and the mmap threshold is not checked") {
  retrace::use_fixed_mmap_threshold();
  SUCCEED();
}
#else
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
#endif
