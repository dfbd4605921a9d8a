// The trace index spilled to unnamed temporary files; the layout is in index_spill.hpp.
#include "format/index_spill.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "format/wire.hpp"

namespace retrace::detail {

namespace {

static_assert(std::endian::native == std::endian::little, "the spill holds Cap'n Proto's bytes");
constexpr std::size_t kFrameWords = 3;
constexpr std::size_t kKeyWords = 4;
static_assert(capnp::_::structSize<wire::FrameEntry>().data == kFrameWords &&
              capnp::_::structSize<wire::FrameEntry>().pointers == 0);
static_assert(capnp::_::structSize<wire::KeyEntry>().data == kKeyWords &&
              capnp::_::structSize<wire::KeyEntry>().pointers == 0);
static_assert(capnp::_::structSize<wire::TraceIndex>().data == 0 &&
              capnp::_::structSize<wire::TraceIndex>().pointers == 2);
constexpr std::size_t kSpillChunk = 64 * 1024;

// A struct pointer (also the shape of a composite list's tag word): offset in words from the end
// of the pointer (for a tag: the element count), data words, pointer count.
std::uint64_t struct_word(std::uint64_t offset, std::uint64_t data, std::uint64_t pointers) {
  return (offset << 2) | (data << 32) | (pointers << 48);
}
// A list pointer to an inline composite list: offset in words to its tag, words after the tag.
std::uint64_t composite_list_word(std::uint64_t offset, std::uint64_t words) {
  return 1 | (offset << 2) | (std::uint64_t{7} << 32) | (words << 35);
}

int open_unnamed(const std::filesystem::path& trace_path) {
  std::filesystem::path directory = trace_path.parent_path();
  if (directory.empty()) directory = ".";
  int fd = ::open(directory.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd >= 0) return fd;
  // A file system without O_TMPFILE: a name, unlinked as soon as it exists.
  std::string name = (directory / ("." + trace_path.filename().string() + ".index-XXXXXX")).string();
  fd = ::mkostemp(name.data(), O_CLOEXEC);
  if (fd >= 0) ::unlink(name.c_str());
  return fd;
}

}  // namespace

IndexSpill::IndexSpill(const std::filesystem::path& trace_path, std::uint64_t max_bytes)
    : trace_path_(trace_path), max_bytes_(std::min<std::uint64_t>(max_bytes, 0xFFFFFFF8u)) {
  for (Stream* stream : {&frames_, &keys_}) {
    stream->fd = open_unnamed(trace_path);
    if (stream->fd < 0) {
      give_up("cannot create a temporary file for it next to the trace: " + errno_text(errno));
      return;
    }
  }
}

IndexSpill::~IndexSpill() {
  for (Stream* stream : {&frames_, &keys_})
    if (stream->fd >= 0) ::close(stream->fd);
}

std::uint64_t IndexSpill::message_bytes() const {
  return 8 + 8 * (3 + 1 + kFrameWords * frames_.count + 1 + kKeyWords * keys_.count);
}

void IndexSpill::add_frame(std::uint64_t offset, std::uint64_t first_record, std::uint32_t records) {
  std::uint64_t entry[kFrameWords] = {offset, first_record, records};
  append(frames_, entry, sizeof entry);
}

void IndexSpill::add_key(std::uint64_t exchange_id, const RequestKey& key, std::uint32_t frame) {
  std::uint64_t entry[kKeyWords] = {exchange_id, key.hi, key.lo, frame};
  append(keys_, entry, sizeof entry);
}

void IndexSpill::append(Stream& stream, const void* entry, std::size_t size) {
  if (!note_.empty()) return;
  if (message_bytes() + size > max_bytes_) {
    give_up("it would pass the " + std::to_string(max_bytes_) +
            " bytes a trace message may hold (" + std::to_string(keys_.count) +
            " exchanges indexed); every frame is still read in order");
    return;
  }
  stream.buffer.append(static_cast<const char*>(entry), size);
  ++stream.count;
  if (stream.buffer.size() >= kSpillChunk) spill(stream);
}

void IndexSpill::spill(Stream& stream) {
  std::size_t done = 0;
  while (done < stream.buffer.size()) {
    ssize_t n = ::write(stream.fd, stream.buffer.data() + done, stream.buffer.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      give_up("writing its temporary file failed: " + errno_text(errno));
      return;
    }
    done += static_cast<std::size_t>(n);
  }
  stream.buffer.clear();
}

void IndexSpill::give_up(const std::string& why) {
  if (!note_.empty()) return;
  note_ = "no index written: " + why;
  for (Stream* stream : {&frames_, &keys_}) {
    if (stream->fd >= 0) ::close(stream->fd);
    stream->fd = -1;
    stream->buffer.clear();
    stream->buffer.shrink_to_fit();
  }
}

bool IndexSpill::copy(Stream& stream, const Sink& out) {
  if (::lseek(stream.fd, 0, SEEK_SET) != 0) {
    give_up("cannot read its temporary file back: " + errno_text(errno));
    return false;
  }
  std::string chunk(kSpillChunk, '\0');
  for (;;) {
    ssize_t n = ::read(stream.fd, chunk.data(), chunk.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      give_up("cannot read its temporary file back: " + errno_text(errno));
      return false;
    }
    if (n == 0) break;
    out(chunk.data(), static_cast<std::size_t>(n));
  }
  out(stream.buffer.data(), stream.buffer.size());
  return true;
}

bool IndexSpill::write(const Sink& out) {
  if (!note_.empty()) return false;
  std::uint64_t frame_words = kFrameWords * frames_.count;
  std::uint64_t key_words = kKeyWords * keys_.count;
  // Checked before anything goes out, so a failure leaves no half index in the trace.
  for (Stream* stream : {&frames_, &keys_})
    if (::lseek(stream->fd, 0, SEEK_END) < 0 ||
        static_cast<std::uint64_t>(::lseek(stream->fd, 0, SEEK_END)) + stream->buffer.size() !=
            stream->count * (stream == &frames_ ? kFrameWords : kKeyWords) * 8) {
      give_up("its temporary file is short");
      return false;
    }
  std::uint32_t table[2] = {0, static_cast<std::uint32_t>(message_bytes() / 8 - 1)};
  std::uint64_t head[4] = {
      struct_word(0, 0, 2),
      composite_list_word(1, frame_words),            // from word 2 to the frames tag at 3
      composite_list_word(1 + frame_words, key_words),  // from word 3 past the frames list
      struct_word(frames_.count, kFrameWords, 0)};
  out(table, sizeof table);
  out(head, sizeof head);
  if (!copy(frames_, out)) return false;
  std::uint64_t keys_tag = struct_word(keys_.count, kKeyWords, 0);
  out(&keys_tag, sizeof keys_tag);
  return copy(keys_, out);
}

}  // namespace retrace::detail
