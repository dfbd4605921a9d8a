// The open frame's bytes, built in place (frame_input.hpp).
#include "format/frame_input.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

namespace retrace::detail {

void FrameInput::Free::operator()(capnp::word* words) const { std::free(words); }

void FrameInput::reserve(std::size_t words) {
  if (words <= capacity_) return;
  // calloc: a large block's pages come zeroed from the kernel as they are first touched, so room
  // never used costs nothing; what is used is zeroed again by clear().
  std::unique_ptr<capnp::word[], Free> grown(static_cast<capnp::word*>(std::calloc(words, sizeof(capnp::word))));
  if (!grown) throw std::bad_alloc();
  if (used_) std::memcpy(grown.get(), words_.get(), used_ * sizeof(capnp::word));
  words_ = std::move(grown);
  capacity_ = words;
}

kj::ArrayPtr<capnp::word> FrameInput::free_room() {
  if (used_ + 1 >= capacity_) return {};
  return kj::arrayPtr(words_.get() + used_ + 1, capacity_ - used_ - 1);
}

void FrameInput::commit(std::size_t words) {
  const std::uint32_t table[2] = {0, static_cast<std::uint32_t>(words)};
  std::memcpy(words_.get() + used_, table, sizeof table);
  used_ += 1 + words;
}

void FrameInput::discard(std::size_t words) {
  std::fill_n(reinterpret_cast<char*>(words_.get() + used_ + 1), words * sizeof(capnp::word), 0);
}

void FrameInput::clear(std::size_t keep_words) {
  if (capacity_ > keep_words) {
    words_.reset();
    capacity_ = 0;
  } else {
    std::fill_n(reinterpret_cast<char*>(words_.get()), used_ * sizeof(capnp::word), 0);
  }
  used_ = 0;
}

RecordBuilder::~RecordBuilder() noexcept(false) = default;

kj::ArrayPtr<capnp::word> RecordBuilder::allocateSegment(unsigned minimum_words) {
  if (!room_given_) {
    room_given_ = true;
    if (room_.size() >= minimum_words && room_.size() > 0) return room_;
  }
  // Past the room: a segment of its own, at least as large as what was used so far.
  std::size_t words = std::max<std::size_t>({minimum_words, room_.size(), 1024});
  own_.emplace_back(new capnp::word[words]());
  return kj::arrayPtr(own_.back().get(), words);
}

std::size_t RecordBuilder::room_words_used() {
  auto segments = getSegmentsForOutput();
  return room_.size() > 0 && segments.size() > 0 && segments[0].begin() == room_.begin() ? segments[0].size() : 0;
}

bool RecordBuilder::in_place() {
  auto segments = getSegmentsForOutput();
  return segments.size() == 1 && room_.size() > 0 && segments[0].begin() == room_.begin();
}

}  // namespace retrace::detail
