// Internal to format/: the trace index as the writer builds it, kept on disk rather than in RAM.
//
// The index frame at the end of a trace (see trace_writer.cpp) is one Cap'n Proto message,
// TraceIndex { frames :List(FrameEntry), keys :List(KeyEntry) }, in stream framing:
//
//   u32le 0 (one segment), u32le segment words,
//   word  root pointer   -> struct, 0 data words, 2 pointers (the next two words)
//   word  frames pointer -> inline composite list at the frames tag
//   word  keys pointer   -> inline composite list at the keys tag
//   word  frames tag     (element count, 3 data words, 0 pointers), then 3 words per frame:
//                        offset, firstRecord, records (u32le, then 4 zero bytes)
//   word  keys tag       (element count, 4 data words, 0 pointers), then 4 words per exchange:
//                        exchangeId, keyHi, keyLo, frame (u32le, then 4 zero bytes)
//
// The list bodies are exactly the bytes spilled as entries arrive, one unnamed temporary file
// each (O_TMPFILE next to the trace, else a name unlinked at once: nothing is left behind by a
// crash), so the writer's memory stays flat however long the recording; close streams them
// into the trace behind the pointers. An index that would pass max_bytes (what the reader
// accepts) is not written, nor is one whose spill failed (a full disk): the index is optional,
// the frames are all there, and note() says why it is missing.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

#include "format/trace.hpp"

namespace retrace::detail {

class IndexSpill {
 public:
  IndexSpill(const std::filesystem::path& trace_path, std::uint64_t max_bytes);
  ~IndexSpill();
  IndexSpill(const IndexSpill&) = delete;
  IndexSpill& operator=(const IndexSpill&) = delete;

  void add_frame(std::uint64_t offset, std::uint64_t first_record, std::uint32_t records);
  void add_key(std::uint64_t exchange_id, const RequestKey& key, std::uint32_t frame);

  // The index message (stream framing, without the skippable frame's prefix), handed to `out`
  // in pieces. False, and nothing handed, when the index was given up (see note()).
  using Sink = std::function<void(const void* bytes, std::size_t size)>;
  bool write(const Sink& out);
  // The message's size in bytes for the entries so far.
  std::uint64_t message_bytes() const;
  const std::string& note() const { return note_; }  // "" while the index is kept

 private:
  struct Stream {
    int fd = -1;
    std::string buffer;  // entries not yet spilled
    std::uint64_t count = 0;
  };
  void append(Stream& stream, const void* entry, std::size_t size);
  void spill(Stream& stream);
  void give_up(const std::string& why);
  bool copy(Stream& stream, const Sink& out);

  std::filesystem::path trace_path_;
  std::uint64_t max_bytes_;
  Stream frames_;
  Stream keys_;
  std::string note_;
};

}  // namespace retrace::detail
