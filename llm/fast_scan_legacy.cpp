// The legacy (completions) logprobs of a streamed token as OpenAI-compatible servers write it
// (see fast_scan_shape.hpp): ShapeReader::legacy_top, and the whole object read in one pass when
// it has their compact layout.
#include <cstring>

#include "llm/fast_scan_shape.hpp"
#include "llm/fast_scan_walk.hpp"

namespace retrace::llm {

// One legacy top_logprobs object: labels and their logprobs, each label once.
bool ShapeReader::legacy_top(SimpleLogprobs& out) {
  SimpleTopObject& object = out.top.next();
  object.is_object = true;
  object.begin = object.end = out.labels.size();
  const bool whole = this->object([&](std::string_view name) {
    if (!fresh_label(out.labels, object, name)) return false;
    SimpleLabelLogprob& label = out.labels.next();
    keep(label.label, name);
    label.logprob = 0;
    return null() || real(label.logprob);
  });
  object.end = out.labels.size();
  return whole;
}

// The bytes `run` at p_ (p_ left past them): 8 at a time, the last 8 overlapping.
template <std::size_t N>
bool ShapeReader::skip_run(const char (&run)[N]) {
  constexpr std::size_t size = N - 1;
  static_assert(size >= 8);
  if (static_cast<std::size_t>(end_ - p_) < size) return false;
  for (std::size_t at = 0; at + 8 < size; at += 8) {
    if (!same_word<std::uint64_t>(p_ + at, run + at)) return false;
  }
  if (!same_word<std::uint64_t>(p_ + size - 8, run + size - 8)) return false;
  p_ += size;
  return true;
}

// What logprobs() makes of the same bytes, read member by member: each key once, in this order,
// an array of one element each, no whitespace, a top object of at least one label and no null in
// place of an array or an element. Anything else is refused (false) with p_ and `out` as they were
// (out reset), and logprobs() reads the object as it reads any.
bool ShapeReader::legacy_compact(SimpleLogprobs& out) {
  const char* const start = p_;
  const auto refuse = [&] {
    p_ = start;
    out.reset();
    out.is_object = true;
    return false;
  };
  std::string_view text;
  if (!skip_run("{\"tokens\":[\"") || !(--p_, string(text))) return refuse();
  SimpleLegacyToken& token = out.tokens.next();
  token.is_string = true;
  keep(token.text, text);
  if (!skip_run("],\"token_logprobs\":[")) return refuse();
  SimpleNumber& value = out.token_logprobs.next();
  value.value = 0;
  if (!(value.present = real(value.value))) return refuse();
  if (!skip_run("],\"top_logprobs\":[{\"")) return refuse();
  --p_;  // at the first label's quote
  SimpleTopObject& object = out.top.next();
  object.is_object = true;
  object.begin = out.labels.size();
  for (;;) {
    std::string_view name;
    if (p_ == end_ || *p_ != '"' || !string(name) || p_ == end_ || *p_ != ':') return refuse();
    ++p_;
    if (!fresh_label(out.labels, object, name)) return refuse();
    SimpleLabelLogprob& label = out.labels.next();
    keep(label.label, name);
    label.logprob = 0;
    if (!null() && !real(label.logprob)) return refuse();
    if (p_ == end_) return refuse();
    if (*p_ == '}') break;
    if (*p_ != ',') return refuse();
    ++p_;
  }
  ++p_;
  object.end = out.labels.size();
  if (!skip_run("],\"text_offset\":[")) return refuse();
  // The offset as number() reads an integer: 0, or 1 to 15 digits not led by 0 (anything else,
  // a sign, a fraction, an exponent, is refused: number() and logprobs() read it).
  std::int64_t offset = 0;
  const char* const digits = p_;
  if (p_ != end_ && *p_ == '0') {
    ++p_;
  } else {
    while (p_ != end_ && static_cast<unsigned char>(*p_ - '0') <= 9 && p_ - digits < 15) {
      offset = offset * 10 + (*p_++ - '0');
    }
  }
  if (p_ == digits || end_ - p_ < 2 || p_[0] != ']' || p_[1] != '}') return refuse();
  p_ += 2;
  out.text_offsets.push_back(offset);
  out.seen = 2 | 4 | 8 | 16;  // logprobs()'s bits: tokens, token_logprobs, top, text_offset
  out.tokens_is_array = out.token_logprobs_is_array = out.top_is_array = out.text_offset_is_array = true;
  return true;
}

// Past a choice's repeated `{"index":N,` (choice_prefix_): `"text":"..","logprobs":{..}` as
// completions servers write them, read as choice()'s members read them (text kept, "logprobs" by
// logprobs(), their seen bits set). False with p_ and `out` as they were for anything else.
bool ShapeReader::text_and_logprobs(SimpleChoice& out) {
  const char* const start = p_;
  std::string_view text;
  if (!skip_run("\"text\":\"") || !(--p_, string(text))) return p_ = start, false;
  keep(out.text, text);  // before logprobs() reads on: `text` may be unescaped_'s
  // (choice() read on from `start` resets out.logprobs where it reaches "logprobs".)
  if (!skip_run(",\"logprobs\":{") || !(--p_, logprobs(out.logprobs))) return p_ = start, false;
  out.has_text = true;
  out.seen |= 2 | 32;  // choice()'s bits for "text" and "logprobs"
  return true;
}

}  // namespace retrace::llm
