// ContentDecoder on arbitrary bytes under each coding (the first byte chooses gzip, deflate, br,
// zstd or a list of two): never a crash, never more than the decoded-size bound, and the same
// result however the body is split across feed() calls (the second byte chooses the split), since
// record and replay feed bodies as they arrive.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "net/content_coding.hpp"

namespace {

struct Result {
  std::string out;
  bool ok = true;
  bool finished = false;
};

Result decode(std::string_view coding, std::string_view body, std::size_t split, std::size_t limit) {
  Result result;
  retrace::net::ContentDecoder decoder(coding, limit);
  if (decoder.failed()) return {"", false, false};
  result.ok = decoder.feed(body.substr(0, split), result.out) &&
              decoder.feed(body.substr(split), result.out);
  if (result.ok) result.finished = decoder.finish();
  return result;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  static constexpr std::string_view kCodings[] = {"gzip", "deflate", "br", "zstd",
                                                  "gzip, br", "deflate, zstd", "x-unknown", ""};
  auto coding = kCodings[data[0] % std::size(kCodings)];
  std::string_view body(reinterpret_cast<const char*>(data + 2), size - 2);
  std::size_t split = body.empty() ? 0 : data[1] % (body.size() + 1);
  constexpr std::size_t kLimit = 1 << 20;  // small, so bombs hit the bound quickly
  auto whole = decode(coding, body, body.size(), kLimit);
  auto pieces = decode(coding, body, split, kLimit);
  if (whole.out.size() > kLimit || pieces.out.size() > kLimit) std::abort();
  if (whole.ok != pieces.ok || whole.finished != pieces.finished) std::abort();
  if (whole.ok && whole.out != pieces.out) std::abort();
  return 0;
}
