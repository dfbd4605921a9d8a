// What a file that is not a trace looks like (see trace_sniff.hpp).
#include "format/trace_sniff.hpp"

#include <algorithm>
#include <cstring>
#include <string_view>

#include "format/wire.hpp"

namespace retrace::detail {

namespace {
bool looks_like_text(const char* bytes, std::size_t size) {
  for (std::size_t i = 0; i < size; ++i) {
    unsigned char c = static_cast<unsigned char>(bytes[i]);
    if (c < 0x09 || (c > 0x0d && c < 0x20)) return false;
  }
  return size > 0;
}
}  // namespace

// Says what a file that is not a zstd stream looks like, and what to try.
std::string sniff(const std::filesystem::path& path, const char* bytes, std::size_t size) {
  std::string what = path.string() + " is not a retrace trace (not a zstd stream): ";
  auto starts = [&](std::string_view prefix) {
    return size >= prefix.size() && std::memcmp(bytes, prefix.data(), prefix.size()) == 0;
  };
  if (size == 0) return what + "the file is empty";
  if (starts("\x1f\x8b")) return what + "it looks like gzip; decompress it with gunzip first";
  if (starts("BZh")) return what + "it looks like bzip2";
  if (starts("\xfd" "7zXZ")) return what + "it looks like xz";
  if (bytes[0] == '{' || bytes[0] == '[')
    return what + "it looks like JSON or JSONL; to turn a dataset into a trace try `retrace import " +
           path.string() + " --out TRACE.rtrace`";
  if (size >= 8 && load_le32(bytes) == 0 && load_le32(bytes + 4) < (1u << 20))
    return what + "it looks like an uncompressed Cap'n Proto stream; try `zstd " + path.string() +
           "` and read the .zst";
  if (looks_like_text(bytes, std::min<std::size_t>(size, 256)))
    return what + "it looks like a text file";
  return what + "unknown binary data";
}

}  // namespace retrace::detail
