// copy_trace_with_header: a finished trace under a new header, its exchange frames copied byte
// for byte. Replay writes its run to OUT.partial (readable whatever happens to the process) and
// learns the last of its header (the server's metrics after the run) only at the end; this turns
// that file into OUT without decoding or compressing any exchange again.
//
// The frames are found by walking zstd's own framing (RFC 8878: a frame header, blocks with
// 3-byte headers, an optional 4-byte checksum), reading headers only; the index at the end says
// how many records each frame holds and their keys. Anything unexpected (no index, a frame the
// index does not list, a torn tail) returns false before `to` is created: the caller re-encodes.
#include <fcntl.h>
#include <unistd.h>
#define ZSTD_STATIC_LINKING_ONLY  // ZSTD_getFrameHeader: the frame header, parsed (stable since 1.4)
#include <zstd.h>

#include <cerrno>

#include <capnp/serialize.h>

#include "format/trace.hpp"
#include "format/trace_copy.hpp"
#include "format/wire.hpp"

namespace retrace {

using namespace detail;

namespace {

struct File {
  std::filesystem::path path;
  int fd = -1;
  std::uint64_t size = 0;
  ~File() {
    if (fd >= 0) ::close(fd);
  }
  // Exactly `size` bytes at `offset`; false when the file ends first.
  bool read_at(std::uint64_t offset, void* out, std::size_t bytes) const {
    char* dst = static_cast<char*>(out);
    while (bytes > 0) {
      ssize_t n = ::pread(fd, dst, bytes, static_cast<off_t>(offset));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        int error = errno;
        throw TraceError("cannot read trace " + path.string() + " at offset " +
                         std::to_string(offset) + ": " + errno_text(error));
      }
      if (n == 0) return false;
      dst += n;
      offset += static_cast<std::uint64_t>(n);
      bytes -= static_cast<std::size_t>(n);
    }
    return true;
  }
};

// The size of the zstd frame at `offset`, from its frame and block headers; nullopt when they do
// not make a whole frame inside the file.
std::optional<std::uint64_t> zstd_frame_size(const File& file, std::uint64_t offset) {
  unsigned char head[ZSTD_FRAMEHEADERSIZE_MAX] = {};
  std::size_t have = static_cast<std::size_t>(
      std::min<std::uint64_t>(sizeof head, file.size - offset));
  if (!file.read_at(offset, head, have)) return std::nullopt;
  ZSTD_frameHeader header{};
  if (ZSTD_getFrameHeader(&header, head, have) != 0) return std::nullopt;
  std::uint64_t at = offset + header.headerSize;
  for (;;) {
    unsigned char block[3];
    if (!file.read_at(at, block, 3)) return std::nullopt;
    std::uint32_t word = block[0] | (block[1] << 8) | (std::uint32_t{block[2]} << 16);
    bool last = word & 1;
    std::uint32_t type = (word >> 1) & 3;
    std::uint32_t size = word >> 3;
    if (type == 3) return std::nullopt;  // reserved
    at += 3 + (type == 1 ? 1 : size);   // an RLE block stores one byte
    if (at > file.size) return std::nullopt;
    if (last) break;
  }
  if (header.checksumFlag) at += 4;
  if (at > file.size) return std::nullopt;
  return at - offset;
}

}  // namespace

bool copy_trace_with_header(const std::filesystem::path& from, const std::filesystem::path& to,
                            const TraceHeader& header, WriterOptions options) {
  File file;
  file.path = from;
  file.fd = ::open(from.c_str(), O_RDONLY | O_CLOEXEC);
  if (file.fd < 0) {
    int error = errno;
    throw TraceError("cannot open trace " + from.string() + ": " + errno_text(error));
  }
  off_t end = ::lseek(file.fd, 0, SEEK_END);
  if (end < 0) return false;
  file.size = static_cast<std::uint64_t>(end);

  // Walk the frames up to the index, which must be the last thing in the file.
  std::vector<std::uint64_t> starts;  // of the zstd frames, then the index's
  std::uint64_t at = 0;
  std::optional<TraceIndex> index;
  while (at < file.size) {
    std::uint32_t prefix[2] = {};
    if (!file.read_at(at, prefix, 4)) return false;
    if (prefix[0] == kZstdMagic) {
      auto size = zstd_frame_size(file, at);
      if (!size) return false;
      starts.push_back(at);
      at += *size;
      continue;
    }
    if (prefix[0] != kIndexMagic || !file.read_at(at, prefix, 8)) return false;
    std::uint64_t size = prefix[1];
    if (size % 8 != 0 || at + 8 + size != file.size || size > options.max_frame_bytes) return false;
    std::vector<capnp::word> words(size / 8);
    if (!file.read_at(at + 8, words.data(), size)) return false;
    try {
      capnp::ReaderOptions limits;
      limits.traversalLimitInWords = options.max_frame_bytes / 8;
      capnp::FlatArrayMessageReader message(kj::arrayPtr(words.data(), words.size()), limits);
      index.emplace();
      read_index(message.getRoot<wire::TraceIndex>(), *index);
    } catch (const kj::Exception&) {
      return false;
    }
    starts.push_back(at);
    at = file.size;
  }
  // Every frame as the index lists it: the header first, then exchange records only.
  if (!index || starts.size() != index->frames.size() + 1 || index->frames.empty()) return false;
  for (std::size_t k = 0; k < index->frames.size(); ++k)
    if (index->frames[k].offset != starts[k]) return false;
  if (index->frames[0].records != 1) return false;
  // The keys are in write order, frame by frame: one per exchange record. A frame's other records
  // (format 1.5's /metrics scrapes) have none, so a frame holds at least as many records as keys.
  std::vector<std::uint32_t> keyed(index->frames.size(), 0);
  for (std::size_t listed = 0; listed < index->keys.size(); ++listed) {
    auto k = index->keys[listed].frame;
    if (k == 0 || k >= index->frames.size() || ++keyed[k] > index->frames[k].records) return false;
    if (listed > 0 && k < index->keys[listed - 1].frame) return false;
  }

  TraceWriter writer(to, header, options);
  std::string frame;
  std::size_t key = 0;
  for (std::size_t k = 1; k < index->frames.size(); ++k) {
    frame.resize(starts[k + 1] - starts[k]);
    if (!file.read_at(starts[k], frame.data(), frame.size()))
      throw TraceError("trace " + from.string() + " shrank while it was copied");
    writer.append_frame(frame, index->frames[k].records, index->keys.data() + key, keyed[k]);
    key += keyed[k];
  }
  writer.close();
  return true;
}

}  // namespace retrace
