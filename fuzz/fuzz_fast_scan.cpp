// The scanner in front of the fast path's SAX parser (llm/fast_scan.hpp) on one event's bytes given
// exactly: wherever it reads the input to its end, Boost.JSON's basic_parser must accept it with
// the very same events and values, and the fast path's parser must make the same choices, logprobs,
// token ids and usage with the scanner as without it (fuzz/scan_differential.hpp). The input is
// copied into a buffer of its own size, so ASan sees any read past the event (the scanner reads 16
// bytes at a time).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string_view>

#include "fuzz/scan_differential.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::unique_ptr<char[]> exact(new char[size == 0 ? 1 : size]);
  std::copy(data, data + size, exact.get());
  const std::string_view event(exact.get(), size);
  using retrace::fuzzing::ScanVerdict;
  if (retrace::fuzzing::scan_against_parser(event) == ScanVerdict::differs) std::abort();
  // One parser pair across inputs, as a decoder keeps its parser across a stream's events.
  static retrace::fuzzing::ScanAndParse fast;
  if (!fast.agree(event)) std::abort();
  return 0;
}
