// The fast path's reader of the repeated event shape (see fast_scan_shape.hpp). Each rule below is
// what fast_event.cpp's SimpleEventHandler and fast_logprobs.cpp's LogprobsReader make of the same
// value; where those two read a value some other way (a number where a string goes, a string
// where an object goes, ...), this gives up instead, and they read it.
#include "llm/fast_scan_shape.hpp"

#include <cstring>

#include "llm/decoder_impl.hpp"
#include "llm/fast_scan_walk.hpp"

namespace retrace::llm {

namespace {
// The longest prefix_ kept: servers' are ~100-250 bytes; a longer one is read each time instead of
// held for the decoder's life.
constexpr std::size_t kMostPrefix = 1024;
}

bool ShapeReader::skip_value() {
  if (p_ == end_) return false;
  switch (*p_) {
    case '{': return object([&](std::string_view) { return skip_value(); });
    case '[': return array([&] { return skip_value(); });
    case '"': {
      std::string_view ignored;
      return string(ignored);
    }
    case 't': return literal("true");
    case 'f': return literal("false");
    case 'n': return literal("null");
    default: {
      JsonNumber ignored;
      return number(ignored);
    }
  }
}

bool ShapeReader::null() { return p_ != end_ && *p_ == 'n' && literal("null"); }

bool ShapeReader::integer_or_null(std::optional<std::int64_t>& out) {
  if (p_ != end_ && *p_ == 'n') return out = std::nullopt, literal("null");
  JsonNumber number;
  if (!this->number(number) || number.is_double) return false;
  out = number.integer;
  return true;
}

bool ShapeReader::real(double& out) {
  if (skip_values_) return out = 0, skip_number();
  JsonNumber number;
  if (!this->number(number)) return false;
  out = number.is_double ? number.real : static_cast<double>(number.integer);  // LogprobsReader's rule
  return true;
}

// What number() accepts, nothing converted: -?(0|[1-9] up to 15 digits)(.digits)?([eE][+-]?1-4
// digits)?, ending where number() ends (tests/llm_lean_decode_test.cpp compares the two).
bool ShapeReader::skip_number() {
  const char* const start = p_;
  const auto refuse = [&] { return p_ = start, false; };
  if (p_ != end_ && *p_ == '-') ++p_;
  if (!digit_at(p_, end_)) return refuse();
  if (*p_ == '0') {
    ++p_;
    if (digit_at(p_, end_)) return refuse();
  } else if (skip_digits() > 15) {
    return refuse();
  }
  if (p_ != end_ && *p_ == '.') {
    ++p_;
    if (skip_digits() == 0) return refuse();
  }
  if (p_ != end_ && (*p_ | 32) == 'e') {
    ++p_;
    if (p_ != end_ && (*p_ == '+' || *p_ == '-')) ++p_;
    const std::size_t digits = skip_digits();
    if (digits == 0 || digits > 4) return refuse();
  }
  return true;
}

bool ShapeReader::string_or_null(bool& has, EventText& out) {
  if (p_ == end_) return false;
  if (*p_ == 'n') return literal("null");
  std::string_view value;
  if (*p_ != '"' || !string(value)) return false;
  has = true;
  keep(out, value);
  return true;
}

bool ShapeReader::string_or_null(bool& has, std::string& out) {
  if (p_ == end_) return false;
  if (*p_ == 'n') return literal("null");
  std::string_view value;
  if (*p_ != '"' || !string(value)) return false;
  has = true;
  out.assign(value);
  return true;
}

bool ShapeReader::read(std::string_view data) {
  start(data);
  depth_ = 0;
  used_ = 0;
  usage_ = {};
  bool saw_choices = false;
  seen_ = 0;
  std::uint32_t& seen = seen_;
  finished_ = false;
  quiet_from_ = nullptr;  // set by this event's last choice, if it has one
  tail_at_ = !tail_.empty() && data.size() > tail_.size() ? end_ - tail_.size() : nullptr;
  std::uint32_t seen_with_choices = 0;  // `seen` when "choices" was read
  bool usage_before_choices = false;
  // Entered past the bytes up to the "choices" value when they are the last such prefix's (prefix_).
  bool resumed = false;
  if (!prefix_.empty() && data.size() > prefix_.size() && std::memcmp(data.data(), prefix_.data(), prefix_.size()) == 0) {
    p_ += prefix_.size();
    depth_ = 1;
    seen = prefix_seen_;
    resumed = true;
  } else {
    skip_space();
  }
  const auto top_key = [&](std::string_view name) {
    if (is(name, "choices")) {
      if (!first_time(seen, 1)) return false;
      saw_choices = true;
      seen_with_choices = seen;
      usage_before_choices = usage_.present;
      // Up to here the bytes of the event made no change but to `seen`: kept, with it, for the
      // next event (unless "usage" was among them, or they are too long to hold).
      if (!resumed && (seen & 2) == 0 && static_cast<std::size_t>(p_ - data.data()) <= kMostPrefix) {
        prefix_.assign(data.data(), p_);
        prefix_seen_ = seen & ~1u;
      }
      return array([&] {
        if (*p_ != '{' || used_ == kMaxParts) return false;
        if (used_ == choices_.size()) choices_.emplace_back();
        return choice(choices_[used_++]);
      });
    }
    if (is(name, "usage")) {
      if (!first_time(seen, 2)) return false;
      if (null()) return true;
      usage_.present = true;
      return usage_object();
    }
    if (is(name, "object")) {  // "error" makes it an error event
      std::string_view value;
      return first_time(seen, 4) && p_ != end_ && *p_ == '"' && string(value) && value != "error";
    }
    if (is(name, "error")) return false;
    return skip_value();
  };
  bool first = resumed;
  const bool whole = container(
      '{', '}',
      [&] {
        if (!first) return member(top_key);
        first = false;
        return top_key("choices");
      },
      resumed);
  if (!whole) return false;
  skip_space();
  if (p_ != end_ || !saw_choices) return false;
  // The bytes after the last choice's last member that made a change made none but to `seen`s
  // (nulls, skipped keys, closings; no "usage" object): kept, with those marks, for the next event.
  if (!finished_ && quiet_from_ != nullptr && usage_.present == usage_before_choices &&
      static_cast<std::size_t>(end_ - quiet_from_) <= kMostPrefix) {
    tail_.assign(quiet_from_, end_);
    tail_choice_seen_ = choices_[used_ - 1].seen & ~quiet_choice_seen_;
    tail_seen_ = seen & ~seen_with_choices;
  }
  return true;
}

bool ShapeReader::take_tail(SimpleChoice& out) {
  if ((out.seen & tail_choice_seen_) != 0 || (seen_ & tail_seen_) != 0 ||
      std::memcmp(p_, tail_.data(), tail_.size()) != 0) {
    return false;
  }
  out.seen |= tail_choice_seen_;
  seen_ |= tail_seen_;
  p_ = end_;
  finished_ = true;
  return true;
}

bool ShapeReader::choice(SimpleChoice& out) {
  out.index = 0;
  out.has_text = out.has_finish_reason = false;
  out.delta.reset();
  out.message.reset();
  out.seen = 0;
  out.logprobs.reset();
  out.has_token_ids = false;
  out.token_ids.clear();
  const char* const start = p_;
  bool entered = false;  // past choice_prefix_ and its ","
  quiet_from_ = nullptr;
  if (!choice_prefix_.empty() && static_cast<std::size_t>(end_ - p_) > choice_prefix_.size() &&
      std::memcmp(p_, choice_prefix_.data(), choice_prefix_.size()) == 0) {
    p_ += choice_prefix_.size();
    skip_space();
    if (p_ != end_ && *p_ == ',') {  // the index's value ended with the prefix (no "05", "0.5")
      ++p_;
      skip_space();
      if (++depth_ > kMaxDepth) return false;
      out.index = choice_prefix_index_;
      out.seen = 1;
      entered = true;
      quiet_from_ = start + choice_prefix_.size();
      quiet_choice_seen_ = out.seen;
    } else {
      p_ = start;
    }
  }
  bool quiet = false;  // the member just read made no change but to out.seen
  const auto key = [&](std::string_view name) {
    quiet = false;
    if (is(name, "index")) {
      std::optional<std::int64_t> index;
      const bool first = out.seen == 0;
      if (!first_time(out.seen, 1) || !integer_or_null(index)) return false;
      if (index && (*index < 0 || static_cast<std::uint64_t>(*index) >= kMaxParts)) return false;
      if (index) out.index = *index;
      // The choice's first member: its bytes so far are the next choice's prefix if it repeats them.
      if (first && static_cast<std::size_t>(p_ - start) <= kMostPrefix) {
        choice_prefix_.assign(start, p_);
        choice_prefix_index_ = out.index;
      }
      return true;
    }
    if (is(name, "text")) {
      if (!first_time(out.seen, 2) || !string_or_null(out.has_text, out.text)) return false;
      return quiet = !out.has_text, true;
    }
    if (is(name, "finish_reason")) {
      if (!first_time(out.seen, 4) || !string_or_null(out.has_finish_reason, out.finish_reason)) return false;
      return quiet = !out.has_finish_reason, true;
    }
    if (is(name, "delta") || is(name, "message")) {
      SimpleMessage& message = is(name, "delta") ? out.delta : out.message;
      if (!first_time(out.seen, is(name, "delta") ? 8 : 16)) return false;
      if (null()) return quiet = true, true;
      message.is_object = true;
      return this->message(message);
    }
    if (is(name, "logprobs")) {
      if (!first_time(out.seen, 32)) return false;
      if (null()) return quiet = true, true;
      return logprobs(out.logprobs);
    }
    if (is(name, "token_ids")) {
      if (!first_time(out.seen, 64)) return false;
      if (null()) return quiet = true, true;
      out.has_token_ids = true;
      return array([&] {
        JsonNumber id;
        if (!number(id) || id.is_double) return false;
        out.token_ids.push_back(token_id_of(std::optional<std::int64_t>(id.integer)));
        return true;
      });
    }
    quiet = true;
    return skip_value();
  };
  if (entered && text_and_logprobs(out)) {  // members read as `key` reads them, then on as after any
    quiet_from_ = p_;
    quiet_choice_seen_ = out.seen;
    if (p_ == tail_at_ && take_tail(out)) return true;
    skip_space();
    if (p_ == end_ || (*p_ != ',' && *p_ != '}')) return false;
    if (*p_++ == '}') return --depth_, true;
    skip_space();
  }
  return container('{', '}', [&] {
    if (!member(key)) return false;
    // Where the last event's tail would begin: the rest of the event read at once when it is that.
    if (p_ == tail_at_ && take_tail(out)) return true;
    if (!quiet) {
      quiet_from_ = p_;
      quiet_choice_seen_ = out.seen;
    }
    return true;
  }, entered);
}

bool ShapeReader::message(SimpleMessage& out) {
  std::uint32_t seen = 0;
  return object([&](std::string_view name) {
    if (is(name, "content")) return first_time(seen, 1) && string_or_null(out.has_content, out.content);
    // Read by the DOM path unless null.
    if (is(name, "reasoning")) return first_time(seen, 2) && null();
    if (is(name, "reasoning_content")) return first_time(seen, 4) && null();
    if (is(name, "refusal")) return first_time(seen, 8) && null();
    if (is(name, "tool_calls")) return first_time(seen, 16) && null();
    return skip_value();
  });
}

bool ShapeReader::usage_object() {
  std::uint32_t seen = 0;
  return object([&](std::string_view name) {
    if (is(name, "prompt_tokens")) return first_time(seen, 1) && integer_or_null(usage_.prompt_tokens);
    if (is(name, "completion_tokens")) return first_time(seen, 2) && integer_or_null(usage_.completion_tokens);
    if (is(name, "total_tokens")) return first_time(seen, 4) && integer_or_null(usage_.total_tokens);
    if (is(name, "reasoning_tokens")) return first_time(seen, 8) && integer_or_null(usage_.reasoning_tokens_top);
    if (is(name, "completion_tokens_details")) {
      if (!first_time(seen, 16)) return false;
      if (null()) return true;
      usage_.details_present = true;
      std::uint32_t details = 0;
      return object([&](std::string_view inner) {
        if (inner != "reasoning_tokens") return skip_value();
        return first_time(details, 1) && integer_or_null(usage_.reasoning_tokens_details);
      });
    }
    return skip_value();
  });
}

bool ShapeReader::logprobs(SimpleLogprobs& out) {
  out.reset();
  out.is_object = true;
  if (legacy_compact(out)) return true;
  constexpr std::uint32_t content = 1, tokens = 2, token_logprobs = 4, top = 8, text_offset = 16, refusal = 32;
  const bool whole = object([&](std::string_view name) {
    if (is(name, "content")) {
      if (!first_time(out.seen, content)) return false;
      if (null()) return true;
      out.content_is_array = true;
      return array([&] { return content_entry(out, true); });
    }
    if (is(name, "tokens")) {
      if (!first_time(out.seen, tokens)) return false;
      if (null()) return true;
      out.tokens_is_array = true;
      return array([&] {
        std::string_view text;
        if (*p_ != '"' || !string(text)) return false;
        SimpleLegacyToken& token = out.tokens.next();
        token.is_string = true;
        keep(token.text, text);
        return true;
      });
    }
    if (is(name, "token_logprobs")) {
      if (!first_time(out.seen, token_logprobs)) return false;
      if (null()) return true;
      out.token_logprobs_is_array = true;
      return array([&] {
        SimpleNumber& value = out.token_logprobs.next();
        value.present = false;
        value.value = 0;
        if (null()) return true;
        return value.present = real(value.value);
      });
    }
    if (is(name, "top_logprobs")) {
      if (!first_time(out.seen, top)) return false;
      if (null()) return true;
      out.top_is_array = true;
      return array([&] {
        if (null()) return out.top.next().is_object = false, true;
        return legacy_top(out);
      });
    }
    if (is(name, "text_offset")) {
      if (!first_time(out.seen, text_offset)) return false;
      if (null()) return true;
      out.text_offset_is_array = true;
      return array([&] {
        JsonNumber offset;
        if (!number(offset) || offset.is_double) return false;
        out.text_offsets.push_back(offset.integer);
        return true;
      });
    }
    if (is(name, "refusal")) return first_time(out.seen, refusal) && null();
    return skip_value();
  });
  // Neither shape and none of the keys that say "nothing here": the DOM path notes it.
  return whole && (out.content_is_array || out.tokens_is_array || (out.seen & (content | tokens | refusal)));
}

// One chat "content" entry (`entry`) or one of its top_logprobs alternatives.
bool ShapeReader::content_entry(SimpleLogprobs& out, bool entry) {
  if (*p_ != '{') return false;
  SimpleLogprobToken& token = entry ? out.entries.next() : out.alternatives.next();
  token.reset();
  constexpr std::uint32_t text = 1, logprob = 2, bytes = 4, id = 8, top = 16;
  return object([&](std::string_view name) {
    if (is(name, "token")) {
      if (!first_time(token.seen, text)) return false;
      return string_or_null(token.has_token, token.token);
    }
    if (is(name, "logprob")) {
      if (!first_time(token.seen, logprob)) return false;
      if (null()) return true;
      return token.has_logprob = real(token.logprob);
    }
    if (is(name, "bytes")) {
      if (!first_time(token.seen, bytes)) return false;
      if (null()) return true;
      token.has_bytes = true;
      token.bytes_invalid = false;
      token.bytes.clear();
      const bool whole = array([&] {
        if (null()) return token.bytes_invalid = true, true;
        JsonNumber byte;
        if (!number(byte) || byte.is_double) return false;
        if (byte.integer >= 0 && byte.integer <= 255) {
          token.bytes.push_back(static_cast<char>(byte.integer));
        } else {
          token.bytes_invalid = true;
        }
        return true;
      });
      if (token.bytes_invalid) token.has_bytes = false;
      return whole;
    }
    if (is(name, "id")) {
      if (!first_time(token.seen, id)) return false;
      std::optional<std::int64_t> value;
      if (!integer_or_null(value)) return false;
      token.has_id = true;
      token.id = token_id_of(value);
      return true;
    }
    if (entry && is(name, "top_logprobs")) {
      if (!first_time(token.seen, top)) return false;
      if (null()) return true;
      token.has_top = true;
      token.top_begin = token.top_end = out.alternatives.size();
      const bool whole = array([&] { return content_entry(out, false); });
      token.top_end = out.alternatives.size();
      return whole;
    }
    // llama.cpp's spellings, read by the DOM path only.
    if (entry ? (is(name, "content") || is(name, "prob") || is(name, "top_probs") || is(name, "probs"))
              : (is(name, "tok_str") || is(name, "prob"))) {
      return false;
    }
    return skip_value();
  });
}

}  // namespace retrace::llm
