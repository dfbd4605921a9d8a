// Internal to llm/: the fast path's reader of a streamed choice's "logprobs" value, the two shapes
// retrace serve, vLLM, SGLang and llama.cpp's /v1 stream:
//   legacy (completions)  {"tokens":[..],"token_logprobs":[..],"top_logprobs":[{tok:lp},..],
//                          "text_offset":[..]}
//   chat                  {"content":[{"token","logprob","bytes":[..],"id"?,"top_logprobs":[
//                          {"token","logprob","bytes","id"?},..]}],"refusal":..}
// The SAX handler of fast_event.cpp hands every parse event inside the value to a LogprobsReader,
// which keeps what read_content_logprobs() and read_legacy_logprobs() (tokens.cpp) would read, as
// plain values; Impl::read_simple_logprobs() then makes the same tokens from them. Whatever those
// two read in a way this does not model (llama.cpp's "prob", "top_probs", "probs", "tok_str",
// "content" spellings, duplicate keys, a shape that is neither) makes the reader give up, and the
// event goes through the DOM path.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace retrace::llm {

// A string of the event being read: a view of the event's own bytes where it has none to unescape
// (the event outlives its reading: FastEventParser::parse), else a copy of what it unescapes to;
// read as a std::string_view. ShapeReader views; the SAX handlers, whose strings may sit in the
// parser's buffer, copy. A view saves a string copy per token and per alternative.
class EventText {
 public:
  void view(std::string_view text) {
    view_ = text;
    copied_ = false;
  }
  void assign(std::string_view text) {
    copy_.assign(text);
    copied_ = true;
  }
  std::string_view get() const { return copied_ ? std::string_view(copy_) : view_; }
  operator std::string_view() const { return get(); }

 private:
  std::string_view view_;
  std::string copy_;  // kept warm across events
  bool copied_ = true;
};

// A vector whose elements keep their capacity across events: clear() forgets them, next() hands
// the next one back (reset by the caller), so a warm reader allocates nothing.
template <typename T>
class ReusedList {
 public:
  void clear() { used_ = 0; }
  T& next() {
    if (used_ == items_.size()) items_.emplace_back();
    return items_[used_++];
  }
  T& back() { return items_[used_ - 1]; }
  std::size_t size() const { return used_; }
  bool empty() const { return used_ == 0; }
  const T& operator[](std::size_t i) const { return items_[i]; }
  const T* begin() const { return items_.data(); }
  const T* end() const { return items_.data() + used_; }

 private:
  std::vector<T> items_;
  std::size_t used_ = 0;
};

// One chat entry or one of its alternatives, as read_content_logprobs() reads it.
struct SimpleLogprobToken {
  bool has_token = false;  // "token" is a string
  EventText token;
  bool has_bytes = false;  // "bytes" is an array of integers 0..255
  bool bytes_invalid = false;
  std::string bytes;
  bool has_id = false;  // "id" is present (any value: token_id_of() of it)
  std::int32_t id = -1;
  bool has_logprob = false;  // "logprob" is a number
  double logprob = 0;
  bool has_top = false;  // "top_logprobs" is an array (entries only)
  std::size_t top_begin = 0, top_end = 0;  // its alternatives in SimpleLogprobs::alternatives
  std::uint32_t seen = 0;  // bit per key, to give up on duplicates

  void reset() {
    has_token = has_bytes = bytes_invalid = has_id = has_logprob = has_top = false;
    id = -1;
    top_begin = top_end = 0;
    seen = 0;
  }
};

// One legacy "tokens" element, and its top_logprobs object as (label, logprob) pairs.
struct SimpleLegacyToken {
  bool is_string = false;
  EventText text;
};
struct SimpleLabelLogprob {
  EventText label;
  double logprob = 0;  // number_of(value).value_or(0)
};
struct SimpleTopObject {
  bool is_object = false;
  std::size_t begin = 0, end = 0;  // in SimpleLogprobs::labels
};
// The most labels one legacy top_logprobs object may have on the fast path. A new label is checked
// against the object's labels so far (a duplicate gives up), so past this an object would cost its
// size squared: a hostile 2 MB object of 100,000 labels, seconds. The fast path gives such an
// object up, and the DOM path (hashed keys) reads it. Servers send at most 20 (OpenAI, vLLM's
// default max_logprobs); llama.cpp's n_probs can ask for more.
inline constexpr std::size_t kMostFastLabels = 256;
// Whether `label` may be added to `object`: not past kMostFastLabels, and not already in it.
template <class Labels>
bool fresh_label(const Labels& labels, const SimpleTopObject& object, std::string_view label) {
  if (labels.size() - object.begin >= kMostFastLabels) return false;
  for (std::size_t i = object.begin; i < labels.size(); ++i) {
    if (labels[i].label.get() == label) return false;
  }
  return true;
}
struct SimpleNumber {
  bool present = false;
  double value = 0;
};

struct SimpleLogprobs {
  bool is_object = false;  // "logprobs" was an object (else nothing below is set)
  std::uint32_t seen = 0;  // bit per key of the logprobs object
  bool content_is_array = false, tokens_is_array = false, token_logprobs_is_array = false,
       top_is_array = false, text_offset_is_array = false;
  ReusedList<SimpleLogprobToken> entries;       // chat
  ReusedList<SimpleLogprobToken> alternatives;  // chat, every entry's, in order
  ReusedList<SimpleLegacyToken> tokens;         // legacy
  ReusedList<SimpleNumber> token_logprobs;
  ReusedList<SimpleTopObject> top;
  ReusedList<SimpleLabelLogprob> labels;
  bool text_offsets_integers = true;  // every text_offset element is an integer (integer_of)
  std::vector<std::int64_t> text_offsets;

  void reset() {
    is_object = false;
    seen = 0;
    content_is_array = tokens_is_array = token_logprobs_is_array = top_is_array = text_offset_is_array = false;
    entries.clear();
    alternatives.clear();
    tokens.clear();
    token_logprobs.clear();
    top.clear();
    labels.clear();
    text_offsets_integers = true;
    text_offsets.clear();
  }
};

// Reads one "logprobs" object from its object-begin to its object-end. Every method returns
// false to give up (the caller then gives up on the event).
class LogprobsReader {
 public:
  void begin(SimpleLogprobs& out);
  bool done() const { return depth_ == 0; }

  bool object_begin();
  bool object_end();
  bool array_begin();
  bool array_end();
  bool key(std::string_view name);
  bool string(std::string_view value);
  bool int64(std::int64_t value);
  bool uint64(std::uint64_t value);
  bool real(double value);
  bool boolean();
  bool null();

 private:
  enum class Level : std::uint8_t {
    logprobs, content, entry, entry_bytes, entry_top, alternative, alternative_bytes,  // chat
    tokens, token_logprobs, top, top_object, text_offset,                               // legacy
  };
  enum class Key : std::uint8_t {
    other,
    content, tokens, token_logprobs, top_logprobs, text_offset, refusal,  // logprobs object
    token, logprob, bytes, id,                                            // entries (and top_logprobs)
    label,                                                                // a legacy top object's key
  };
  static constexpr std::uint32_t bit(Key key) { return 1u << static_cast<unsigned>(key); }

  Key classify(std::string_view name) const;
  bool push(Level level);
  bool scalar_value(const double* number, std::int64_t integer, bool is_integer);
  SimpleLogprobToken& token_object();
  bool mark_seen(Key key);

  static constexpr int kMaxLevels = 8;
  SimpleLogprobs* out_ = nullptr;
  Level levels_[kMaxLevels] = {};
  int depth_ = 0;
  int skip_ = 0;  // depth inside a value nobody reads
  Key key_ = Key::other;
};

}  // namespace retrace::llm
