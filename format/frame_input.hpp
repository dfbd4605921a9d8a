// Internal to format/ (trace_writer.cpp): the open frame's decompressed bytes, contiguous and not
// moved while the frame is open, so that zstd reads them where they are (ZSTD_c_stableInBuffer)
// instead of copying each record into its own input buffer; and each record built by Cap'n Proto
// straight into the free, zeroed room after them (RecordBuilder), so the record is not copied
// either. A record is laid out as the stream framing says (format/trace.capnp): one word of
// segment table (u32 0, u32 words) and its one segment, the same bytes MallocMessageBuilder over a
// large enough first segment gives. The room is zeroed again once its frame is compressed.
#pragma once

#include <capnp/message.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace retrace::detail {

class FrameInput {
 public:
  // Room for `words` words at least (the writer asks for a frame's target and its largest record).
  void reserve(std::size_t words);
  const capnp::word* data() const { return words_.get(); }
  std::size_t used_words() const { return used_; }
  std::size_t capacity_words() const { return capacity_; }
  // The zeroed room after the used words, less the word a record's segment table takes.
  kj::ArrayPtr<capnp::word> free_room();
  // The record just built at the start of free_room(), `words` long and one segment, kept: its
  // segment table is written before it.
  void commit(std::size_t words);
  // A record built in free_room() and not kept: its `words` are zeroed again.
  void discard(std::size_t words);
  // After the frame is compressed: everything zeroed again, nothing used. Room past `keep_words`
  // is given back (a record of hundreds of MB does not pin its memory for the writer's life).
  void clear(std::size_t keep_words);

 private:
  struct Free {
    void operator()(capnp::word* words) const;
  };
  std::unique_ptr<capnp::word[], Free> words_;
  std::size_t capacity_ = 0;
  std::size_t used_ = 0;
};

// A MessageBuilder whose first segment is a FrameInput's free room; past it, segments of its
// own (zeroed, freed with it). Unlike MallocMessageBuilder it does not zero its first segment when
// destroyed: the writer keeps what it built, or discards it (FrameInput::discard).
class RecordBuilder : public capnp::MessageBuilder {
 public:
  explicit RecordBuilder(FrameInput& input) : room_(input.free_room()) {}
  ~RecordBuilder() noexcept(false) override;
  kj::ArrayPtr<capnp::word> allocateSegment(unsigned minimum_words) override;
  // The words of the FrameInput's free room the message took (0 when it did not start there).
  std::size_t room_words_used();
  // True when the message is one segment, in the FrameInput's free room.
  bool in_place();

 private:
  kj::ArrayPtr<capnp::word> room_;
  bool room_given_ = false;
  std::vector<std::unique_ptr<capnp::word[]>> own_;
};

}  // namespace retrace::detail
