// Every dialect's decoder on arbitrary bytes, as a whole body and as a stream of SSE events,
// with the fast path on and off: both paths must decode the same (a differential target; the
// check is fuzz/decoder_differential.hpp, which tests/llm_fast_equivalence_test.cpp also runs on the
// corpus this target grew).
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "fuzz/decoder_differential.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (!retrace::fuzzing::decoders_agree(data, size)) std::abort();
  return 0;
}
