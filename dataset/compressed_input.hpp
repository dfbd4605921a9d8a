// Reading an input file that may be compressed: plain bytes, gzip (.gz, also zlib/deflate
// streams) or zstd (.zst), told apart by the first bytes rather than by the name, so a renamed
// file still reads. Concatenated gzip members and zstd frames read as one stream, as `zcat` and
// `zstdcat` do. Memory stays bounded: one input chunk and one output chunk at a time.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

namespace retrace {

enum class Compression : std::uint8_t { none, gzip, zstd };
std::string_view to_string(Compression);

class CompressedInput {
 public:
  // Opens `path` and sniffs its compression. Throws TraceError when it cannot be opened.
  explicit CompressedInput(const std::filesystem::path& path);
  ~CompressedInput();
  CompressedInput(const CompressedInput&) = delete;
  CompressedInput& operator=(const CompressedInput&) = delete;

  // The longest line next_line() returns: what one trace record holds (kMaxFrameBytes). Memory
  // for a line stays near it whatever a compressed file claims.
  static constexpr std::size_t kMaxLineBytes = 512u << 20;

  // The next line without its "\n" (or "\r\n") into `line`; false at the end of the input.
  // Throws TraceError naming the file and the line when the compressed stream is corrupt or cut
  // short, when the line is longer than kMaxLineBytes, or when reading fails.
  bool next_line(std::string& line);
  // Up to `size` decompressed bytes into `out`; 0 at the end.
  std::size_t read(char* out, std::size_t size);
  // The number of the line next_line() returned last (1 for the first).
  std::uint64_t line_number() const { return line_number_; }
  Compression compression() const;
  const std::filesystem::path& path() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::uint64_t line_number_ = 0;
};

}  // namespace retrace
