// Internal to format/: the frame layer of the .rtrace reader. It reads the file in chunks, finds
// its frames, decodes one zstd frame at a time into a word-aligned buffer and reads the index
// frame; what it had to drop on the way is kept as the reader's Recovery. The record layer
// (trace_reader.cpp) walks the messages of the frame it hands out.
//
//   zstd frame:       u32le 0xFD2FB528 ... (a content checksum; whole Cap'n Proto messages only)
//   skippable frame:  u32le 0x184D2A5?, u32le size, size bytes (read past)
//   the index frame:  the skippable frame 0x184D2A5E: one TraceIndex message
//
// Before the header is read (begin_records()), any damage is the torn tail: the reader then
// refuses the file. After it, a frame that cannot be read is skipped by resynchronising at the
// next frame magic; a run of damaged frames counts as one skipped region once a good frame
// follows, and with none following it is the torn tail. Neither is an exception.
#pragma once

#include <capnp/message.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "format/trace.hpp"

struct ZSTD_DCtx_s;  // zstd.h's ZSTD_DCtx; the .cpp includes zstd with its static-linking API

namespace retrace::detail {

class FrameReader {
 public:
  // Opens `path`. Throws TraceError when it cannot be read, is not a regular file, or does not
  // start with a zstd frame (then saying what it looks like instead: trace_sniff.hpp).
  FrameReader(const std::filesystem::path& path, const ReaderOptions& options);
  ~FrameReader();
  FrameReader(const FrameReader&) = delete;
  FrameReader& operator=(const FrameReader&) = delete;

  // Decodes the next zstd frame, reading past skippable frames (keeping the index) and, after
  // begin_records(), past damaged frames. False at the end of the file or at a torn tail (then
  // recovery() says which), and ended() from then on.
  bool load_frame();
  // Decodes the zstd frame that starts at file offset `at` (one load_frame() returned before),
  // for a reader that goes back to a record it saw: false when no readable zstd frame starts
  // there (the file changed), with ended() false so that it may be asked again.
  bool load_frame_at(std::uint64_t at);
  // The frame load_frame() decoded; valid until the next load_frame().
  std::span<const std::uint64_t> words() const { return {frame_.data(), frame_words_}; }
  std::uint64_t frame_offset() const { return frame_offset_; }
  // The current frame decoded (its checksum held) but a record in it is corrupt: its remaining
  // records are dropped, a skipped region (before begin_records(), the torn tail).
  void drop_frame_rest(std::string reason);
  // One record of the current frame (`bytes` long) is refused on its own: a skipped region at the
  // frame's offset; the frame's other records are read.
  void skip_record(std::uint64_t bytes, std::string reason) {
    note_skipped(frame_offset_, bytes, std::move(reason));
  }
  // The header was read: damage is skipped from now on, and the recovery so far is forgotten.
  void begin_records();

  bool ended() const { return ended_; }
  const Recovery& recovery() const { return recovery_; }
  const std::filesystem::path& path() const { return path_; }
  // The reader's limits, for every message read from a frame.
  const capnp::ReaderOptions& capnp_options() const { return capnp_options_; }
  std::uint64_t file_size() const { return file_size_; }
  std::uint64_t decompressed_bytes() const { return decompressed_; }
  bool has_index() const { return has_index_; }
  const TraceIndex& index() const { return index_; }
  std::uint64_t peak_buffer_bytes() const { return peak_buffer_bytes_; }

 private:
  void open();
  void release();
  std::uint64_t offset() const { return input_file_offset_ + input_pos_; }
  bool refill();
  bool read_exact(void* out, std::size_t size);
  bool seek(std::uint64_t to);
  std::optional<std::uint64_t> find_next_frame();
  void torn(std::uint64_t at, std::string reason);
  bool damaged(std::uint64_t at, std::string reason);
  void damage_ends(std::uint64_t at);
  void note_skipped(std::uint64_t at, std::uint64_t bytes, std::string reason);
  void note_buffers();
  bool next_frame();
  void read_index(std::uint32_t size, std::uint64_t at);
  bool decompress_frame(std::uint32_t magic);
  bool decode_in_place(std::uint32_t magic, bool& too_small);

  std::filesystem::path path_;
  capnp::ReaderOptions capnp_options_;
  std::uint64_t frame_limit_bytes_ = 0;
  // Released by the destructor, and by the constructor when it throws.
  int fd_ = -1;
  ZSTD_DCtx_s* decompressor_ = nullptr;
  std::uint64_t file_size_ = 0;

  // File input, read in chunks.
  std::vector<char> input_;
  std::size_t input_pos_ = 0;
  std::size_t input_len_ = 0;
  std::uint64_t input_file_offset_ = 0;  // file offset of input_[0]

  // The current decompressed frame, as words so messages are aligned for capnp. Its size is the
  // largest any frame needed so far; frame_words_ of it are this frame's.
  std::vector<std::uint64_t> frame_;
  std::size_t frame_words_ = 0;
  std::uint64_t frame_offset_ = 0;
  // The first bytes of the frame being decoded, enough for its header: the content size it
  // declares, read before `frame_` grows for it.
  std::string frame_head_;

  std::vector<std::uint64_t> skippable_;  // the index frame's contents, while it is read
  bool has_index_ = false;
  TraceIndex index_;
  std::uint64_t decompressed_ = 0;
  std::uint64_t peak_buffer_bytes_ = 0;

  Recovery recovery_;
  bool ended_ = false;
  bool past_header_ = false;  // resynchronising is for records, never for the header
  std::optional<std::uint64_t> damage_start_;  // of the damaged frames being skipped
  std::string damage_reason_;
};

}  // namespace retrace::detail
