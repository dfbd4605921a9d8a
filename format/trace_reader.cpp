// The .rtrace writer and reader. Byte layout (see trace.hpp and trace.capnp):
//
//   zstd frame 0:   [segment table | segments] of Record{header}
//   zstd frame k:   [segment table | segments] of Record{exchange} ... (one frame per flush)
//   skippable:      u32le 0x184D2A5E, u32le size, [segment table | segments] of TraceIndex
//
// Every zstd frame carries a content checksum and holds whole messages only, so the reader can
// accept a frame's records once the frame decoded and verified, and drop a torn or corrupt tail
// at a frame boundary.
//
// This file is the reader: frames decoded one at a time into a word-aligned buffer, messages
// walked by their segment tables. Past the header, a torn or corrupt tail ends the stream and is
// reported in Recovery, not thrown.
#include <capnp/message.h>
#include <capnp/serialize.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#define ZSTD_STATIC_LINKING_ONLY  // ZSTD_d_stableOutBuffer: decode straight into `frame` (stable since 1.4)
#include <zstd.h>
#include <zstd_errors.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <kj/exception.h>

#include "format/trace.hpp"
#include "format/trace_sniff.hpp"
#include "format/wire.hpp"

namespace retrace {

using namespace detail;

struct TraceReader::Impl {
  std::filesystem::path path;
  ReaderOptions options;
  int fd = -1;
  std::uint64_t file_size = 0;
  ZSTD_DCtx* decompressor = nullptr;

  // File input, read in chunks.
  std::vector<char> input;
  std::size_t input_pos = 0;
  std::size_t input_len = 0;
  std::uint64_t input_file_offset = 0;  // file offset of input[0]

  // The current decompressed frame, as words so messages are aligned for capnp.
  std::vector<std::uint64_t> frame;
  std::size_t frame_words = 0;
  std::size_t frame_cursor = 0;  // in words
  std::uint64_t frame_offset = 0;
  std::uint64_t frame_limit_bytes = 0;

  std::vector<std::uint64_t> skippable;  // index frame contents
  TraceHeader header;
  Recovery recovery;
  bool ended = false;
  bool has_index = false;
  TraceIndex index;
  std::uint64_t decompressed = 0;
  std::uint64_t peak_buffer_bytes = 0;
  bool past_header = false;  // resynchronising is for records, never for the header
  std::optional<std::uint64_t> damage_start;  // of the damaged frames being skipped
  std::string damage_reason;
  // The message next_record() returned, and the one next(ExchangeOutputs&) did (for
  // read_last(); valid until the frame is left, i.e. until the next call of next()).
  kj::ArrayPtr<const capnp::word> current;
  std::optional<kj::ArrayPtr<const capnp::word>> last;

  ~Impl() {
    if (decompressor) ZSTD_freeDCtx(decompressor);
    if (fd >= 0) ::close(fd);
  }

  std::uint64_t offset() const { return input_file_offset + input_pos; }

  bool refill() {
    if (input_pos < input_len) return true;
    input_file_offset += input_len;
    input_pos = input_len = 0;
    for (;;) {
      ssize_t n = ::read(fd, input.data(), input.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        int error = errno;
        throw TraceError("cannot read trace " + path.string() + " at offset " +
                         std::to_string(offset()) + ": " + errno_text(error));
      }
      input_len = static_cast<std::size_t>(n);
      return n > 0;
    }
  }

  // Copies exactly `size` bytes; false (consuming what there was) when the file ends first.
  bool read_exact(void* out, std::size_t size) {
    char* dst = static_cast<char*>(out);
    while (size > 0) {
      if (!refill()) return false;
      std::size_t n = std::min(size, input_len - input_pos);
      std::memcpy(dst, input.data() + input_pos, n);
      input_pos += n;
      dst += n;
      size -= n;
    }
    return true;
  }

  void torn(std::uint64_t at, std::string reason) {
    recovery.torn = true;
    recovery.dropped_from_offset = at;
    recovery.dropped_bytes = file_size > at ? file_size - at : 0;
    recovery.reason = std::move(reason);
    ended = true;
  }

  // ---- resynchronising past damage ---------------------------------------------------------
  // A frame at `at` could not be read. Past the header, reading goes on at the next frame start
  // (a zstd or skippable magic) after it: true when there is one. A run of damaged frames counts
  // as one skipped region once a good frame follows; with none, it is the torn tail.
  bool damaged(std::uint64_t at, std::string reason) {
    if (!damage_start) {
      damage_start = at;
      damage_reason = std::move(reason);
    }
    if (past_header && seek(at + 1)) {
      if (auto next = find_next_frame()) {
        if (seek(*next)) return true;
      }
    }
    torn(*damage_start, damage_reason);
    return false;
  }

  // A good frame was read at `at`: the damage before it was a skipped region.
  void damage_ends(std::uint64_t at) {
    if (!damage_start) return;
    note_skipped(*damage_start, at - *damage_start, damage_reason);
    damage_start.reset();
  }

  // The current frame decoded (its checksum held) but a record in it is corrupt: its remaining
  // records are dropped and reading goes on with the next frame.
  void skip_frame_rest(std::string reason) {
    frame_cursor = frame_words;
    if (!past_header) return torn(frame_offset, std::move(reason));
    note_skipped(frame_offset, offset() - frame_offset, std::move(reason));
  }

  void note_skipped(std::uint64_t at, std::uint64_t bytes, std::string reason) {
    if (recovery.skipped_regions++ == 0) {
      recovery.first_skipped_offset = at;
      recovery.skipped_reason = std::move(reason);
    }
    recovery.skipped_bytes += bytes;
  }

  bool seek(std::uint64_t to) {
    if (::lseek(fd, static_cast<off_t>(to), SEEK_SET) < 0) return false;
    input_file_offset = to;
    input_pos = input_len = 0;
    return true;
  }

  // The file offset of the next zstd or skippable frame magic from here, or nullopt.
  std::optional<std::uint64_t> find_next_frame() {
    std::uint32_t window = 0;
    int seen = 0;
    while (refill()) {
      for (; input_pos < input_len; ++input_pos) {
        window = (window >> 8) | (std::uint32_t{static_cast<unsigned char>(input[input_pos])} << 24);
        if (++seen >= 4 && (window == kZstdMagic || (window & kSkippableMask) == kSkippableBase))
          return offset() - 3;
      }
    }
    return std::nullopt;
  }

  void note_buffers() {
    std::uint64_t bytes = (frame.size() + skippable.size()) * 8 + input.size();
    peak_buffer_bytes = std::max(peak_buffer_bytes, bytes);
  }

  void read_index(std::uint32_t size, std::uint64_t at) {
    if (size % 8 != 0 || size > frame_limit_bytes) {
      torn(at, "the index frame has an impossible size (" + std::to_string(size) + " bytes)");
      return;
    }
    skippable.assign(size / 8, 0);
    note_buffers();
    if (!read_exact(skippable.data(), size)) {
      torn(at, "the index frame is truncated");
      return;
    }
    try {
      kj::ArrayPtr<const capnp::word> words(
          reinterpret_cast<const capnp::word*>(skippable.data()), skippable.size());
      capnp::FlatArrayMessageReader message(words, to_capnp_options());
      detail::read_index(message.getRoot<wire::TraceIndex>(), index);
      has_index = true;
    } catch (const kj::Exception& e) {
      torn(at, std::string("the index frame is corrupt: ") + e.getDescription().cStr());
    }
    skippable.clear();
    skippable.shrink_to_fit();
  }

  capnp::ReaderOptions to_capnp_options() const {
    capnp::ReaderOptions capnp_options;
    capnp_options.traversalLimitInWords = options.traversal_limit_words;
    capnp_options.nestingLimit = options.nesting_limit;
    return capnp_options;
  }

  // Decodes the next zstd frame into `frame`, skipping skippable frames. False at the end of the
  // file or at a torn/corrupt tail (then `recovery` says which).
  bool load_frame() {
    frame_words = frame_cursor = 0;
    for (;;) {
      if (!refill()) {  // the end of the file
        if (damage_start) torn(*damage_start, damage_reason);
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
          if (ended) return false;
        } else {
          std::uint64_t left = size;
          while (left > 0) {
            if (!refill()) {
              torn(at, "a skippable frame is truncated");
              return false;
            }
            std::size_t n = std::min<std::uint64_t>(left, input_len - input_pos);
            input_pos += n;
            left -= n;
          }
        }
        continue;
      }
      if (magic != kZstdMagic) {
        if (!damaged(at, "no zstd frame starts here (bytes " + hex32(magic) + ")")) return false;
        continue;
      }
      frame_offset = at;
      if (decompress_frame(magic)) {
        damage_ends(at);
        return true;
      }
      if (ended) return false;  // nothing readable follows: the torn tail
    }
  }

  static std::string hex32(std::uint32_t value) {
    char text[16];
    unsigned char bytes[4];
    std::memcpy(bytes, &value, 4);
    std::snprintf(text, sizeof text, "%02x %02x %02x %02x", bytes[0], bytes[1], bytes[2],
                  bytes[3]);
    return text;
  }

  // Decodes the zstd frame at frame_offset (its magic read) straight into `frame`: the
  // decompressor writes there in place (ZSTD_d_stableOutBuffer), so no block is copied from a
  // buffer of its own. The frames carry no content size, so `frame` keeps the largest size any
  // frame needed; a frame that does not fit is decoded again from its start into a buffer twice
  // as large, up to the frame limit.
  bool decompress_frame(std::uint32_t magic) {
    for (;;) {
      bool too_small = false;
      if (decode_in_place(magic, too_small)) return true;
      if (!too_small) return false;
      if (frame.size() * 8 > frame_limit_bytes) {
        damaged(frame_offset, "a frame decompresses to more than " + std::to_string(frame_limit_bytes) + " bytes");
        return false;
      }
      std::size_t words = std::max<std::size_t>(frame.size() * 2, (1u << 20) / 8);
      frame.resize(std::min<std::size_t>(words, frame_limit_bytes / 8 + 1));
      note_buffers();
      if (!seek(frame_offset + 4)) {
        damaged(frame_offset, "cannot read the frame again: " + errno_text(errno));
        return false;
      }
    }
  }

  // One attempt of decompress_frame(): false with `too_small` when `frame` is too small for it.
  bool decode_in_place(std::uint32_t magic, bool& too_small) {
    ZSTD_DCtx_reset(decompressor, ZSTD_reset_session_only);
    ZSTD_outBuffer out{frame.data(), frame.size() * 8, 0};
    // Feeds `in` to the decompressor; returns zstd's hint (0: the frame is complete).
    auto step = [&](ZSTD_inBuffer& in) -> std::size_t {
      for (;;) {
        std::size_t hint = ZSTD_decompressStream(decompressor, &out, &in);
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
        damaged(frame_offset, std::string("corrupt zstd frame: ") + ZSTD_getErrorName(hint));
        return true;
      }
      return false;
    };
    ZSTD_inBuffer head{&magic, 4, 0};
    std::size_t hint = step(head);
    if (failed(hint)) return false;
    while (hint != 0) {
      if (!refill()) {
        damaged(frame_offset, "the last zstd frame is incomplete (a torn write)");
        return false;
      }
      ZSTD_inBuffer in{input.data() + input_pos, input_len - input_pos, 0};
      hint = step(in);
      input_pos += in.pos;
      if (failed(hint)) return false;
    }
    std::size_t produced = out.pos;
    if (produced % 8 != 0) {
      damaged(frame_offset, "a frame's contents are not whole Cap'n Proto messages");
      return false;
    }
    frame_words = produced / 8;
    decompressed += produced;
    return true;
  }

  // The next message of the current frame as a word range; empty at the frame's end. Sets
  // `recovery` and returns nullopt when the frame's contents are not a message sequence.
  std::optional<kj::ArrayPtr<const capnp::word>> next_message() {
    const std::uint64_t* base = frame.data() + frame_cursor;
    std::size_t remaining = frame_words - frame_cursor;
    if (remaining == 0) return kj::ArrayPtr<const capnp::word>();
    std::uint32_t first[2];
    std::memcpy(first, base, 8);
    std::uint64_t segment_count = std::uint64_t{first[0]} + 1;
    std::uint64_t table_words = segment_count / 2 + 1;
    if (segment_count > 512 || table_words > remaining) {
      skip_frame_rest("a corrupt Cap'n Proto segment table in the frame");
      return std::nullopt;
    }
    std::uint64_t total = table_words;
    const char* table = reinterpret_cast<const char*>(base);
    for (std::uint64_t i = 0; i < segment_count; ++i) total += load_le32(table + 4 + 4 * i);
    if (total > remaining) {
      skip_frame_rest("a Cap'n Proto message runs past the end of its frame");
      return std::nullopt;
    }
    frame_cursor += total;
    return kj::ArrayPtr<const capnp::word>(reinterpret_cast<const capnp::word*>(base), total);
  }

  // The next exchange record, given to `read` (wire::Exchange::Reader, ListBudget&); false at the
  // end. A record `read` finds corrupt drops the rest of its frame. `current` is its message.
  template <class Read>
  bool next_record(Read read) {
    last.reset();
    while (!ended) {
      auto message = next_message();
      if (!message) continue;  // the rest of a corrupt frame was skipped
      if (message->size() == 0) {
        if (!load_frame()) {
          ended = true;
          return false;
        }
        continue;
      }
      try {
        capnp::FlatArrayMessageReader reader(*message, to_capnp_options());
        auto record = reader.getRoot<wire::Record>();
        if (record.which() != wire::Record::EXCHANGE) continue;  // a repeated header, or newer kinds
        ListBudget budget(message->size());
        read(record.getExchange(), budget);
        current = *message;
        return true;
      } catch (const kj::Exception& e) {
        skip_frame_rest(std::string("a corrupt record in the frame: ") + e.getDescription().cStr());
      } catch (const TraceError& e) {
        skip_frame_rest(e.what());
      }
    }
    return false;
  }
};


TraceReader::TraceReader(const std::filesystem::path& path, ReaderOptions options)
    : impl_(std::make_unique<Impl>()) {
  Impl& impl = *impl_;
  impl.path = path;
  impl.options = options;
  impl.frame_limit_bytes = std::max<std::uint64_t>(options.traversal_limit_words * 8, 1u << 20);
  // O_NONBLOCK: opening a FIFO would otherwise wait for a writer. It is refused below; a
  // regular file reads the same either way.
  impl.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (impl.fd < 0) {
    int error = errno;
    throw TraceError("cannot open trace " + path.string() + ": " + errno_text(error));
  }
  struct stat status {};
  if (::fstat(impl.fd, &status) != 0 || !S_ISREG(status.st_mode))
    throw TraceError("cannot read trace " + path.string() +
                     ": not a regular file (a directory, pipe or device); copy it to a file first");
  impl.file_size = static_cast<std::uint64_t>(status.st_size);
  impl.decompressor = ZSTD_createDCtx();
  if (!impl.decompressor) throw TraceError("cannot create a zstd decompressor (out of memory)");
  ZSTD_DCtx_setParameter(impl.decompressor, ZSTD_d_stableOutBuffer, 1);
  impl.input.resize(ZSTD_DStreamInSize());

  impl.refill();
  if (impl.input_len < 4 || load_le32(impl.input.data()) != kZstdMagic)
    throw TraceError(sniff(path, impl.input.data(), impl.input_len));

  if (!impl.load_frame())
    throw TraceError("cannot read trace " + path.string() + ": no readable header: " +
                     impl.recovery.reason + " at offset " +
                     std::to_string(impl.recovery.dropped_from_offset));
  auto message = impl.next_message();
  if (!message || message->size() == 0)
    throw TraceError("cannot read trace " + path.string() + ": no readable header: " +
                     (message ? "the first frame is empty" : impl.recovery.reason));
  try {
    capnp::FlatArrayMessageReader reader(*message, impl.to_capnp_options());
    auto record = reader.getRoot<wire::Record>();
    if (!record.isHeader())
      throw TraceError("cannot read trace " + path.string() +
                       ": the first record is not a header (is this a retrace trace?)");
    auto header = record.getHeader();
    ListBudget budget(message->size());
    read_header(header, impl.header, budget);
  } catch (const kj::Exception& e) {
    throw TraceError("cannot read trace " + path.string() + ": corrupt header: " +
                     e.getDescription().cStr());
  } catch (const TraceError& e) {
    throw TraceError("cannot read trace " + path.string() + ": corrupt header: " + e.what());
  }
  if (impl.header.format_major > kFormatMajor)
    throw TraceError(path.string() + " uses trace format " +
                     std::to_string(impl.header.format_major) + "." +
                     std::to_string(impl.header.format_minor) + ", but this retrace reads format " +
                     std::to_string(kFormatMajor) + "." + std::to_string(kFormatMinor) +
                     " and older; upgrade retrace to read it");
  impl.recovery = Recovery{};
  impl.ended = false;
  impl.past_header = true;
}

TraceReader::~TraceReader() = default;

const TraceHeader& TraceReader::header() const { return impl_->header; }

bool TraceReader::next(Exchange& out) {
  return impl_->next_record([&](wire::Exchange::Reader exchange, ListBudget& budget) {
    read_exchange(exchange, out, budget);
  });
}

bool TraceReader::next(ExchangeOutputs& out) {
  Impl& impl = *impl_;
  if (!impl.next_record([&](wire::Exchange::Reader exchange, ListBudget& budget) {
        read_outputs(exchange, out, budget);
      }))
    return false;
  impl.last = impl.current;
  return true;
}

void TraceReader::read_last(Exchange& out) {
  Impl& impl = *impl_;
  if (!impl.last)
    throw TraceError("cannot read trace " + impl.path.string() + ": no exchange was read to be read whole");
  try {
    capnp::FlatArrayMessageReader reader(*impl.last, impl.to_capnp_options());
    ListBudget budget(impl.last->size());
    read_exchange(reader.getRoot<wire::Record>().getExchange(), out, budget);
  } catch (const kj::Exception& e) {
    throw TraceError("cannot read trace " + impl.path.string() + ": a corrupt record in the frame at offset " +
                     std::to_string(impl.frame_offset) + ": " + e.getDescription().cStr());
  } catch (const TraceError& e) {
    throw TraceError("cannot read trace " + impl.path.string() + ": " + e.what());
  }
}

const Recovery& TraceReader::recovery() const { return impl_->recovery; }

std::string describe(const Recovery& recovery) {
  std::string text;
  if (recovery.torn)
    text = "torn tail: dropped " + std::to_string(recovery.dropped_bytes) + " bytes from offset " +
           std::to_string(recovery.dropped_from_offset) + " (" + recovery.reason + ")";
  if (recovery.skipped_regions > 0) {
    if (!text.empty()) text += "; ";
    text += "skipped " + std::to_string(recovery.skipped_regions) + " damaged region" +
            (recovery.skipped_regions == 1 ? "" : "s") + ", " +
            std::to_string(recovery.skipped_bytes) + " bytes, the first at offset " +
            std::to_string(recovery.first_skipped_offset) + " (" + recovery.skipped_reason + ")";
  }
  return text;
}
std::uint64_t TraceReader::file_size() const { return impl_->file_size; }
std::uint64_t TraceReader::decompressed_bytes() const { return impl_->decompressed; }
bool TraceReader::has_index() const { return impl_->has_index; }
const TraceIndex& TraceReader::index() const { return impl_->index; }
std::uint64_t TraceReader::peak_buffer_bytes() const { return impl_->peak_buffer_bytes; }

}  // namespace retrace
