// Internal to llm/: the fast path's reader of the one event shape streams repeat, straight into
// SimpleChoice/SimpleUsage with no SAX handler between: a recursive descent whose place in the code
// is its place in the event, so no per-token dispatch on a level stack. It reads an object with a
// "choices" array of choice objects (index, text, delta/message content, finish_reason, token_ids,
// "logprobs" in both OpenAI shapes) and maybe "usage" counts, other keys' values skipped (and
// checked as JSON), with JsonLexer's tokens (fast_scan.hpp: basic_parser's numbers and strings).
// It makes what fast_event.cpp's handler makes of the same bytes, and gives up (false) on
// everything it is not sure of: a duplicate key it reads, a value of a type it does not expect, a
// name the handler refuses or treats apart (errors, reasoning, refusals, tool calls, llama.cpp's
// spellings), deep nesting, bad JSON. FastEventParser then runs the scanner and the handler on the
// same bytes. tests/llm_fast_scan_test.cpp, tests/llm_shape_reader_test.cpp (what it reads on from
// a stream's repeated bytes) and fuzz_fast_scan compare the two paths' results.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "llm/fast_event.hpp"
#include "llm/fast_scan.hpp"

namespace retrace::llm {

class ShapeReader : JsonLexer {
 public:
  ShapeReader() : JsonLexer(unescaped_) {}
  // True when `data` was read whole; choices() and usage() then hold it.
  bool read(std::string_view data);
  std::span<const SimpleChoice> choices() const { return {choices_.data(), used_}; }
  const SimpleUsage& usage() const { return usage_; }
  // real()'s numbers checked but not converted (read as 0): FastEventParser::skip_logprob_values.
  void skip_values(bool skip) { skip_values_ = skip; }

 private:
  // Each reads the value at p_ (whitespace before it skipped) and leaves p_ past it.
  bool choice(SimpleChoice& out);
  // At tail_at_ after a member of `out`: true, p_ at the end and finished_, when tail_ is there.
  bool take_tail(SimpleChoice& out);
  bool message(SimpleMessage& out);
  bool usage_object();
  bool logprobs(SimpleLogprobs& out);
  bool content_entry(SimpleLogprobs& out, bool entry);
  bool legacy_top(SimpleLogprobs& out);
  // fast_scan_legacy.cpp: a legacy logprobs object of one token in OpenAI's compact layout, or
  // false with nothing read (out reset).
  bool legacy_compact(SimpleLogprobs& out);
  template <std::size_t N>
  bool skip_run(const char (&run)[N]);
  bool text_and_logprobs(SimpleChoice& out);
  bool skip_value();
  // A count or an id: an integer, or null (nullopt); false for anything else.
  bool integer_or_null(std::optional<std::int64_t>& out);
  // A number as a double (an integer converted), as LogprobsReader takes a logprob; 0 under
  // skip_values, the number's syntax checked as number() checks it (skip_number).
  bool real(double& out);
  bool skip_number();
  // A string, or null (has false); false for anything else.
  bool string_or_null(bool& has, std::string& out);
  bool string_or_null(bool& has, EventText& out);
  // `text`, a string just read, kept in `out`: viewed where it is the event's bytes.
  void keep(EventText& out, std::string_view text) {
    if (text.data() == unescaped_.data()) {
      out.assign(text);
    } else {
      out.view(text);
    }
  }
  bool null();
  // The container at p_ that `open` begins and `close` ends: item() with p_ at each member or
  // element, then ',' or `close`.
  // `entered`: p_ is already past the opening and the whitespace after it, at a first item.
  template <class Item>
  bool container(char open, char close, Item item, bool entered = false);
  // The key at p_, then key(name) with p_ at its value.
  template <class Key>
  bool member(Key key);
  // The object at p_: calls key(name) for each key, p_ at its value; false when key() is false.
  template <class Key>
  bool object(Key key);
  // The array at p_: calls element() with p_ at each element.
  template <class Element>
  bool array(Element element);

  std::string unescaped_;
  // The bytes of the last event that read up to its "choices" value with no effect but on `seen`
  // (whitespace, "{", the keys and values before it, `"choices":`), and `seen` there. A stream
  // repeats them in every event (id, object, created, model, ...): an event that begins with the
  // same bytes is read on from its "choices" value, as reading them again would leave it.
  std::string prefix_;
  std::uint32_t prefix_seen_ = 0;
  // The same inside a choice: the bytes of the last choice that began with its "index" member, from
  // its "{" through the index's value (`{"index":0`), and that index. A choice that begins with them
  // and a "," after is read on from there, as reading them again would leave it.
  std::string choice_prefix_;
  std::int64_t choice_prefix_index_ = 0;
  // The same at the end: the bytes of the last event from just past its last choice's last member
  // that made a change (index, a string, an object, an array) to its end, when they made none but
  // to the choice's `seen` and the event's (`,"finish_reason":null,"stop_reason":null}]}`), and
  // those marks. A choice whose member ends where the event's last tail_.size() bytes begin, and
  // those bytes are tail_'s (with none of their keys seen yet), is read to the end at once.
  std::string tail_;
  std::uint32_t tail_choice_seen_ = 0, tail_seen_ = 0;
  const char* tail_at_ = nullptr;  // where tail_ would begin in the event read, or nullptr
  bool finished_ = false;          // take_tail() left p_ at the end: every container is closed
  // In the choice being read: just past its last member that made a change, and its `seen` there.
  const char* quiet_from_ = nullptr;
  std::uint32_t quiet_choice_seen_ = 0;
  std::uint32_t seen_ = 0;  // the event's top-level keys read (bit 1 "choices", 2 "usage", 4 "object")
  std::vector<SimpleChoice> choices_;
  std::size_t used_ = 0;
  SimpleUsage usage_;
  int depth_ = 0;  // containers open
  bool skip_values_ = false;
};

}  // namespace retrace::llm
