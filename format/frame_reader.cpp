// The .rtrace reader's frame layer (frame_reader.hpp): file input in chunks, frames found and
// decoded in place one at a time, the index frame, resynchronising past damage and the torn tail.
#include "format/frame_reader.hpp"

#include <capnp/serialize.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#define ZSTD_STATIC_LINKING_ONLY  // ZSTD_d_stableOutBuffer: decode straight into `frame_` (stable since 1.4)
#include <zstd.h>
#include <zstd_errors.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <kj/exception.h>

#include "format/trace_sniff.hpp"
#include "format/wire.hpp"

namespace retrace::detail {

namespace {

std::string hex32(std::uint32_t value) {
  char text[16];
  unsigned char bytes[4];
  std::memcpy(bytes, &value, 4);
  std::snprintf(text, sizeof text, "%02x %02x %02x %02x", bytes[0], bytes[1], bytes[2],
                bytes[3]);
  return text;
}

}  // namespace

FrameReader::FrameReader(const std::filesystem::path& path, const ReaderOptions& options)
    : path_(path),
      frame_limit_bytes_(std::max<std::uint64_t>(options.traversal_limit_words * 8, 1u << 20)) {
  capnp_options_.traversalLimitInWords = options.traversal_limit_words;
  capnp_options_.nestingLimit = options.nesting_limit;
  try {
    open();
  } catch (...) {
    release();
    throw;
  }
}

FrameReader::~FrameReader() { release(); }

void FrameReader::release() {
  if (decompressor_) ZSTD_freeDCtx(decompressor_);
  if (fd_ >= 0) ::close(fd_);
  decompressor_ = nullptr;
  fd_ = -1;
}

void FrameReader::open() {
  // O_NONBLOCK: opening a FIFO would otherwise wait for a writer. It is refused below; a
  // regular file reads the same either way.
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd_ < 0) {
    int error = errno;
    throw TraceError("cannot open trace " + path_.string() + ": " + errno_text(error));
  }
  struct stat status {};
  if (::fstat(fd_, &status) != 0 || !S_ISREG(status.st_mode))
    throw TraceError("cannot read trace " + path_.string() +
                     ": not a regular file (a directory, pipe or device); copy it to a file first");
  file_size_ = static_cast<std::uint64_t>(status.st_size);
  decompressor_ = ZSTD_createDCtx();
  if (!decompressor_) throw TraceError("cannot create a zstd decompressor (out of memory)");
  ZSTD_DCtx_setParameter(decompressor_, ZSTD_d_stableOutBuffer, 1);
  input_.resize(ZSTD_DStreamInSize());

  refill();
  if (input_len_ < 4 || load_le32(input_.data()) != kZstdMagic)
    throw TraceError(sniff(path_, input_.data(), input_len_));
}

bool FrameReader::refill() {
  if (input_pos_ < input_len_) return true;
  input_file_offset_ += input_len_;
  input_pos_ = input_len_ = 0;
  for (;;) {
    ssize_t n = ::read(fd_, input_.data(), input_.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int error = errno;
      throw TraceError("cannot read trace " + path_.string() + " at offset " +
                       std::to_string(offset()) + ": " + errno_text(error));
    }
    input_len_ = static_cast<std::size_t>(n);
    return n > 0;
  }
}

// Copies exactly `size` bytes; false (consuming what there was) when the file ends first.
bool FrameReader::read_exact(void* out, std::size_t size) {
  char* dst = static_cast<char*>(out);
  while (size > 0) {
    if (!refill()) return false;
    std::size_t n = std::min(size, input_len_ - input_pos_);
    std::memcpy(dst, input_.data() + input_pos_, n);
    input_pos_ += n;
    dst += n;
    size -= n;
  }
  return true;
}

bool FrameReader::seek(std::uint64_t to) {
  if (::lseek(fd_, static_cast<off_t>(to), SEEK_SET) < 0) return false;
  input_file_offset_ = to;
  input_pos_ = input_len_ = 0;
  return true;
}

// The file offset of the next zstd or skippable frame magic from here, or nullopt.
std::optional<std::uint64_t> FrameReader::find_next_frame() {
  std::uint32_t window = 0;
  int seen = 0;
  while (refill()) {
    for (; input_pos_ < input_len_; ++input_pos_) {
      window = (window >> 8) | (std::uint32_t{static_cast<unsigned char>(input_[input_pos_])} << 24);
      if (++seen >= 4 && (window == kZstdMagic || (window & kSkippableMask) == kSkippableBase))
        return offset() - 3;
    }
  }
  return std::nullopt;
}

void FrameReader::torn(std::uint64_t at, std::string reason) {
  recovery_.torn = true;
  recovery_.dropped_from_offset = at;
  recovery_.dropped_bytes = file_size_ > at ? file_size_ - at : 0;
  recovery_.reason = std::move(reason);
  ended_ = true;
}

// A frame at `at` could not be read. Past the header, reading goes on at the next frame start
// (a zstd or skippable magic) after it: true when there is one. A run of damaged frames counts
// as one skipped region once a good frame follows; with none, it is the torn tail.
bool FrameReader::damaged(std::uint64_t at, std::string reason) {
  if (!damage_start_) {
    damage_start_ = at;
    damage_reason_ = std::move(reason);
  }
  if (past_header_ && seek(at + 1)) {
    if (auto next = find_next_frame()) {
      if (seek(*next)) return true;
    }
  }
  torn(*damage_start_, damage_reason_);
  return false;
}

// A good frame was read at `at`: the damage before it was a skipped region.
void FrameReader::damage_ends(std::uint64_t at) {
  if (!damage_start_) return;
  note_skipped(*damage_start_, at - *damage_start_, damage_reason_);
  damage_start_.reset();
}

void FrameReader::drop_frame_rest(std::string reason) {
  if (!past_header_) return torn(frame_offset_, std::move(reason));
  note_skipped(frame_offset_, offset() - frame_offset_, std::move(reason));
}

void FrameReader::note_skipped(std::uint64_t at, std::uint64_t bytes, std::string reason) {
  if (recovery_.skipped_regions++ == 0) {
    recovery_.first_skipped_offset = at;
    recovery_.skipped_reason = std::move(reason);
  }
  recovery_.skipped_bytes += bytes;
}

void FrameReader::begin_records() {
  recovery_ = Recovery{};
  ended_ = false;
  past_header_ = true;
}

void FrameReader::note_buffers() {
  std::uint64_t bytes = (frame_.size() + skippable_.size()) * 8 + input_.size();
  peak_buffer_bytes_ = std::max(peak_buffer_bytes_, bytes);
}

void FrameReader::read_index(std::uint32_t size, std::uint64_t at) {
  if (size % 8 != 0 || size > frame_limit_bytes_) {
    torn(at, "the index frame has an impossible size (" + std::to_string(size) + " bytes)");
    return;
  }
  skippable_.assign(size / 8, 0);
  note_buffers();
  if (!read_exact(skippable_.data(), size)) {
    torn(at, "the index frame is truncated");
    return;
  }
  try {
    kj::ArrayPtr<const capnp::word> words(
        reinterpret_cast<const capnp::word*>(skippable_.data()), skippable_.size());
    capnp::FlatArrayMessageReader message(words, capnp_options_);
    detail::read_index(message.getRoot<wire::TraceIndex>(), index_);
    has_index_ = true;
  } catch (const kj::Exception& e) {
    torn(at, std::string("the index frame is corrupt: ") + e.getDescription().cStr());
  }
  skippable_.clear();
  skippable_.shrink_to_fit();
}

bool FrameReader::load_frame() {
  if (next_frame()) return true;
  ended_ = true;
  return false;
}

bool FrameReader::load_frame_at(std::uint64_t at) {
  frame_words_ = 0;
  damage_start_.reset();
  ended_ = false;
  if (at >= file_size_ || !seek(at)) return false;
  std::uint32_t magic = 0;
  if (!read_exact(&magic, 4) || magic != kZstdMagic) return false;
  frame_offset_ = at;
  bool decoded = decompress_frame(magic);
  damage_start_.reset();
  ended_ = false;
  return decoded;
}

// load_frame() but for ended_: the end of the file, or a torn tail (then `recovery_` says which).
bool FrameReader::next_frame() {
  frame_words_ = 0;
  for (;;) {
    if (!refill()) {  // the end of the file
      if (damage_start_) torn(*damage_start_, damage_reason_);
      return false;
    }
    std::uint64_t at = offset();
    std::uint32_t magic = 0;
    if (!read_exact(&magic, 4)) {
      torn(at, "the file ends inside a frame header");
      return false;
    }
    if ((magic & kSkippableMask) == kSkippableBase) {
      std::uint32_t size = 0;
      if (!read_exact(&size, 4)) {
        torn(at, "the file ends inside a skippable frame header");
        return false;
      }
      if (magic == kIndexMagic) {
        read_index(size, at);
        if (ended_) return false;
      } else {
        std::uint64_t left = size;
        while (left > 0) {
          if (!refill()) {
            torn(at, "a skippable frame is truncated");
            return false;
          }
          std::size_t n = std::min<std::uint64_t>(left, input_len_ - input_pos_);
          input_pos_ += n;
          left -= n;
        }
      }
      continue;
    }
    if (magic != kZstdMagic) {
      if (!damaged(at, "no zstd frame starts here (bytes " + hex32(magic) + ")")) return false;
      continue;
    }
    frame_offset_ = at;
    if (decompress_frame(magic)) {
      damage_ends(at);
      return true;
    }
    if (ended_) return false;  // nothing readable follows: the torn tail
  }
}

// Decodes the zstd frame at frame_offset_ (its magic read) straight into `frame_`: the
// decompressor writes there in place (ZSTD_d_stableOutBuffer), so no block is copied from a
// buffer of its own. retrace's frames carry no content size, so `frame_` keeps the largest size
// any frame needed; a frame that does not fit is decoded again from its start into a buffer twice
// as large, up to the frame limit. A frame whose header declares its size (another writer's, or
// a damaged one) is refused when that passes the limit and otherwise given that size at once:
// zstd refuses to start a frame whose declared size does not fit, so without this check one
// changed header byte would grow the buffer to the limit, zero-filled, for nothing.
bool FrameReader::decompress_frame(std::uint32_t magic) {
  for (;;) {
    bool too_small = false;
    if (decode_in_place(magic, too_small)) return true;
    if (!too_small) return false;
    ZSTD_frameHeader declared{};
    bool sized = ZSTD_getFrameHeader(&declared, frame_head_.data(), frame_head_.size()) == 0 &&
                 declared.frameType == ZSTD_frame && declared.frameContentSize != ZSTD_CONTENTSIZE_UNKNOWN;
    if (sized && declared.frameContentSize > frame_limit_bytes_) {
      damaged(frame_offset_, "a frame declares " + std::to_string(declared.frameContentSize) +
                                 " bytes of content, more than the " + std::to_string(frame_limit_bytes_) +
                                 " bytes a frame may hold");
      return false;
    }
    if (frame_.size() * 8 > frame_limit_bytes_ || (sized && declared.frameContentSize <= frame_.size() * 8)) {
      damaged(frame_offset_, "a frame decompresses to more than " +
                                 std::to_string(sized ? declared.frameContentSize : frame_limit_bytes_) + " bytes");
      return false;
    }
    std::size_t words = sized ? (declared.frameContentSize + 7) / 8
                              : std::max<std::size_t>(frame_.size() * 2, (1u << 20) / 8);
    frame_.resize(std::min<std::size_t>(words, frame_limit_bytes_ / 8 + 1));
    note_buffers();
    if (!seek(frame_offset_ + 4)) {
      damaged(frame_offset_, "cannot read the frame again: " + errno_text(errno));
      return false;
    }
  }
}

// One attempt of decompress_frame(): false with `too_small` when `frame_` is too small for it.
bool FrameReader::decode_in_place(std::uint32_t magic, bool& too_small) {
  ZSTD_DCtx_reset(decompressor_, ZSTD_reset_session_only);
  ZSTD_outBuffer out{frame_.data(), frame_.size() * 8, 0};
  // Feeds `in` to the decompressor; returns zstd's hint (0: the frame is complete).
  auto step = [&](ZSTD_inBuffer& in) -> std::size_t {
    for (;;) {
      std::size_t hint = ZSTD_decompressStream(decompressor_, &out, &in);
      if (ZSTD_isError(hint) || hint == 0) return hint;
      if (in.pos == in.size) return hint;  // needs more input
      if (out.pos == out.size) {
        too_small = true;
        return 1;
      }
    }
  };
  auto failed = [&](std::size_t hint) {
    if (ZSTD_isError(hint) && ZSTD_getErrorCode(hint) == ZSTD_error_dstSize_tooSmall) too_small = true;
    if (too_small) return true;
    if (ZSTD_isError(hint)) {
      damaged(frame_offset_, std::string("corrupt zstd frame: ") + ZSTD_getErrorName(hint));
      return true;
    }
    return false;
  };
  frame_head_.assign(reinterpret_cast<const char*>(&magic), 4);
  ZSTD_inBuffer head{&magic, 4, 0};
  std::size_t hint = step(head);
  if (failed(hint)) return false;
  while (hint != 0) {
    if (!refill()) {
      damaged(frame_offset_, "the last zstd frame is incomplete (a torn write)");
      return false;
    }
    ZSTD_inBuffer in{input_.data() + input_pos_, input_len_ - input_pos_, 0};
    if (frame_head_.size() < ZSTD_FRAMEHEADERSIZE_MAX)
      frame_head_.append(input_.data() + input_pos_,
                         std::min(in.size, ZSTD_FRAMEHEADERSIZE_MAX - frame_head_.size()));
    hint = step(in);
    input_pos_ += in.pos;
    if (failed(hint)) return false;
  }
  std::size_t produced = out.pos;
  if (produced % 8 != 0) {
    damaged(frame_offset_, "a frame's contents are not whole Cap'n Proto messages");
    return false;
  }
  frame_words_ = produced / 8;
  decompressed_ += produced;
  return true;
}

}  // namespace retrace::detail
