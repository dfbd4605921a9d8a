// The fast path's "logprobs" reader (see fast_logprobs.hpp), and the tokens the decoder makes of
// what it read: the same as read_content_logprobs() and read_legacy_logprobs() make of the DOM.
#include "llm/fast_logprobs.hpp"

#include "llm/decoder_impl.hpp"

namespace retrace::llm {

void LogprobsReader::begin(SimpleLogprobs& out) {
  out_ = &out;
  out.reset();
  out.is_object = true;
  levels_[0] = Level::logprobs;
  depth_ = 1;
  skip_ = 0;
  key_ = Key::other;
}

bool LogprobsReader::push(Level level) {
  if (depth_ >= kMaxLevels) return false;
  levels_[depth_++] = level;
  key_ = Key::other;
  return true;
}

SimpleLogprobToken& LogprobsReader::token_object() {
  const Level top = levels_[depth_ - 1];
  return top == Level::entry || top == Level::entry_bytes ? out_->entries.back() : out_->alternatives.back();
}

bool LogprobsReader::mark_seen(Key key) {
  std::uint32_t& seen = levels_[depth_ - 1] == Level::logprobs ? out_->seen : token_object().seen;
  if (seen & bit(key)) return false;  // which duplicate wins is the DOM's business
  seen |= bit(key);
  return true;
}

LogprobsReader::Key LogprobsReader::classify(std::string_view name) const {
  switch (levels_[depth_ - 1]) {
    case Level::logprobs:
      if (name == "content") return Key::content;
      if (name == "tokens") return Key::tokens;
      if (name == "token_logprobs") return Key::token_logprobs;
      if (name == "top_logprobs") return Key::top_logprobs;
      if (name == "text_offset") return Key::text_offset;
      if (name == "refusal") return Key::refusal;
      return Key::other;
    case Level::entry:
      if (name == "top_logprobs") return Key::top_logprobs;
      [[fallthrough]];
    case Level::alternative:
      if (name == "token") return Key::token;
      if (name == "logprob") return Key::logprob;
      if (name == "bytes") return Key::bytes;
      if (name == "id") return Key::id;
      return Key::other;
    default: return Key::other;
  }
}

bool LogprobsReader::key(std::string_view name) {
  if (skip_ > 0) return true;
  const Level top = levels_[depth_ - 1];
  if (top == Level::top_object) {
    // A legacy top_logprobs object maps labels to logprobs; which of two equal labels the DOM
    // keeps is its business.
    if (!fresh_label(out_->labels, out_->top.back(), name)) return false;
    SimpleLabelLogprob& label = out_->labels.next();
    label.label.assign(name);
    label.logprob = 0;
    key_ = Key::label;
    return true;
  }
  // llama.cpp's spellings, read by the DOM path only.
  if (top == Level::entry && (name == "content" || name == "prob" || name == "top_probs" || name == "probs")) {
    return false;
  }
  if (top == Level::alternative && (name == "tok_str" || name == "prob")) return false;
  key_ = classify(name);
  if (key_ == Key::other) return true;
  if (!mark_seen(key_)) return false;
  if (key_ == Key::id) {
    token_object().has_id = true;  // token_id_of() of whatever follows: -1 unless an id
    token_object().id = -1;
  }
  return true;
}

bool LogprobsReader::object_begin() {
  if (skip_ > 0) return ++skip_, true;
  switch (levels_[depth_ - 1]) {
    case Level::content:
      out_->entries.next().reset();
      return push(Level::entry);
    case Level::entry_top:
      out_->alternatives.next().reset();
      return push(Level::alternative);
    case Level::top: {
      SimpleTopObject& object = out_->top.next();
      object.is_object = true;
      object.begin = object.end = out_->labels.size();
      return push(Level::top_object);
    }
    default: return scalar_value(nullptr, 0, false) && (++skip_, true);
  }
}

bool LogprobsReader::array_begin() {
  if (skip_ > 0) return ++skip_, true;
  switch (levels_[depth_ - 1]) {
    case Level::logprobs:
      switch (key_) {
        case Key::content: out_->content_is_array = true; return push(Level::content);
        case Key::tokens: out_->tokens_is_array = true; return push(Level::tokens);
        case Key::token_logprobs: out_->token_logprobs_is_array = true; return push(Level::token_logprobs);
        case Key::top_logprobs: out_->top_is_array = true; return push(Level::top);
        case Key::text_offset: out_->text_offset_is_array = true; return push(Level::text_offset);
        default: return ++skip_, true;
      }
    case Level::entry:
    case Level::alternative: {
      SimpleLogprobToken& token = token_object();
      const bool entry = levels_[depth_ - 1] == Level::entry;
      if (key_ == Key::bytes) {
        token.has_bytes = true;
        token.bytes_invalid = false;
        token.bytes.clear();
        return push(entry ? Level::entry_bytes : Level::alternative_bytes);
      }
      if (key_ == Key::top_logprobs) {  // entries only (classify)
        token.has_top = true;
        token.top_begin = token.top_end = out_->alternatives.size();
        return push(Level::entry_top);
      }
      return ++skip_, true;
    }
    default: return scalar_value(nullptr, 0, false) && (++skip_, true);
  }
}

bool LogprobsReader::object_end() {
  if (skip_ > 0) return --skip_, true;
  const Level closed = levels_[--depth_];
  key_ = Key::other;
  if (closed == Level::top_object) out_->top.back().end = out_->labels.size();
  if (closed == Level::logprobs) {
    // Neither shape and none of the keys that say "nothing here": the DOM path notes an unknown
    // shape.
    const std::uint32_t quiet = bit(Key::content) | bit(Key::tokens) | bit(Key::refusal);
    if (!out_->content_is_array && !out_->tokens_is_array && !(out_->seen & quiet)) return false;
  }
  return true;
}

bool LogprobsReader::array_end() {
  if (skip_ > 0) return --skip_, true;
  const Level closed = levels_[--depth_];
  key_ = Key::other;
  if (closed == Level::entry_bytes || closed == Level::alternative_bytes) {
    SimpleLogprobToken& token = token_object();
    if (token.bytes_invalid) token.has_bytes = false;
  }
  if (closed == Level::entry_top) out_->entries.back().top_end = out_->alternatives.size();
  return true;
}

// A scalar (or, with `number` null and not an integer, a container or non-number) where the
// current level wants a value: what each DOM reader makes of it.
bool LogprobsReader::scalar_value(const double* number, std::int64_t integer, bool is_integer) {
  switch (levels_[depth_ - 1]) {
    case Level::entry:
    case Level::alternative: {
      SimpleLogprobToken& token = token_object();
      if (key_ == Key::logprob && number) {
        token.has_logprob = true;
        token.logprob = *number;
      } else if (key_ == Key::id) {
        token.id = token_id_of(is_integer ? std::optional<std::int64_t>(integer) : std::nullopt);
      }
      return true;
    }
    case Level::entry_bytes:
    case Level::alternative_bytes: {
      SimpleLogprobToken& token = token_object();
      if (is_integer && integer >= 0 && integer <= 255) {
        token.bytes.push_back(static_cast<char>(integer));
      } else {
        token.bytes_invalid = true;
      }
      return true;
    }
    case Level::tokens: out_->tokens.next().is_string = false; return true;
    case Level::token_logprobs: {
      SimpleNumber& value = out_->token_logprobs.next();
      value.present = number != nullptr;
      value.value = number ? *number : 0;
      return true;
    }
    case Level::top: out_->top.next().is_object = false; return true;
    case Level::top_object:
      if (number) out_->labels.back().logprob = *number;
      return true;
    case Level::text_offset:
      if (is_integer) {
        out_->text_offsets.push_back(integer);
      } else {
        out_->text_offsets_integers = false;
      }
      return true;
    case Level::logprobs:
    case Level::content:
    case Level::entry_top: return true;  // a value nobody reads, or an element that is not an object
  }
  return true;
}

bool LogprobsReader::string(std::string_view value) {
  if (skip_ > 0) return true;
  const Level top = levels_[depth_ - 1];
  if ((top == Level::entry || top == Level::alternative) && key_ == Key::token) {
    SimpleLogprobToken& token = token_object();
    token.has_token = true;
    token.token.assign(value);
    return true;
  }
  if (top == Level::tokens) {
    SimpleLegacyToken& token = out_->tokens.next();
    token.is_string = true;
    token.text.assign(value);
    return true;
  }
  return scalar_value(nullptr, 0, false);
}

bool LogprobsReader::int64(std::int64_t value) {
  if (skip_ > 0) return true;
  const double number = static_cast<double>(value);
  return scalar_value(&number, value, true);
}

bool LogprobsReader::uint64(std::uint64_t value) {
  if (skip_ > 0) return true;
  const double number = static_cast<double>(value);
  const bool fits = value <= static_cast<std::uint64_t>(INT64_MAX);
  return scalar_value(&number, fits ? static_cast<std::int64_t>(value) : 0, fits);
}

bool LogprobsReader::real(double value) {
  if (skip_ > 0) return true;
  const auto integer = integral_double(value);
  return scalar_value(&value, integer.value_or(0), integer.has_value());
}

bool LogprobsReader::boolean() { return skip_ > 0 || scalar_value(nullptr, 0, false); }
bool LogprobsReader::null() { return skip_ > 0 || scalar_value(nullptr, 0, false); }

// ---------------------------------------------------------------------------------------------
// The tokens: read_content_logprobs() and read_legacy_logprobs() on the values read above.

namespace {

// What a chat alternative's "token" and "bytes" make of it: the id its "token" spells
// ("token_id:123") and no bytes, else its "bytes", else its "token" text.
struct AlternativeSpelling {
  std::optional<std::int32_t> id;
  std::string_view bytes;
};
AlternativeSpelling spelling_of(const SimpleLogprobToken& parsed) {
  if (!parsed.has_token) return {};
  if (const auto id = parse_token_id_string(parsed.token)) return {id, {}};
  return {std::nullopt, parsed.has_bytes ? std::string_view(parsed.bytes) : std::string_view(parsed.token)};
}

}  // namespace

const std::vector<std::int64_t>* ResponseDecoder::Impl::read_simple_logprobs(Choice& choice,
                                                                            const SimpleLogprobs& logprobs,
                                                                            std::int64_t offset_ns) {
  if (!logprobs.is_object) return nullptr;
  if (logprobs.content_is_array) {
    for (const SimpleLogprobToken& entry : logprobs.entries) {
      Token& token = add_token(choice, offset_ns, BytesFrom::unknown);
      BytesFrom& from = bytes_from.back();
      if (entry.has_token) from = set_token_text(token, entry.token);
      if (from != BytesFrom::unknown && entry.has_bytes) {
        token.bytes.assign(entry.bytes);
        from = BytesFrom::bytes_array;
      }
      if (entry.has_id) token.id = entry.id;
      if (entry.has_logprob) {
        token.has_logprob = true;
        token.logprob = to_float(entry.logprob);
      }
      if (!entry.has_top) continue;
      if (!wants.alternatives) {
        // None built (DecodeWants); only what an alternative gives the token: its logprob, when the
        // token has none and an alternative has its bytes (the first such, as below).
        if (token.has_logprob || from == BytesFrom::unknown) continue;
        for (std::size_t i = entry.top_begin; i < entry.top_end && !token.has_logprob; ++i) {
          const SimpleLogprobToken& parsed = logprobs.alternatives[i];
          if (spelling_of(parsed).bytes == token.bytes) {
            token.has_logprob = true;
            token.logprob = parsed.has_logprob ? to_float(parsed.logprob) : 0;
          }
        }
        continue;
      }
      for (std::size_t i = entry.top_begin; i < entry.top_end; ++i) {
        const SimpleLogprobToken& parsed = logprobs.alternatives[i];
        Alternative& alternative = choice.add_alternative(token);
        const AlternativeSpelling spelling = spelling_of(parsed);
        if (spelling.id) alternative.id = *spelling.id;
        alternative.bytes.assign(spelling.bytes);
        if (parsed.has_id) alternative.id = parsed.id;
        alternative.logprob = parsed.has_logprob ? to_float(parsed.logprob) : 0;
        if (!token.has_logprob && from != BytesFrom::unknown && alternative.bytes == token.bytes) {
          token.has_logprob = true;
          token.logprob = alternative.logprob;
        }
      }
      sort_best_first(choice.top(token));
    }
    return nullptr;
  }
  if (!logprobs.tokens_is_array) return nullptr;
  for (std::size_t i = 0; i < logprobs.tokens.size(); ++i) {
    Token& token = add_token(choice, offset_ns, BytesFrom::unknown);
    if (logprobs.tokens[i].is_string) bytes_from.back() = set_token_text(token, logprobs.tokens[i].text);
    if (logprobs.token_logprobs_is_array && i < logprobs.token_logprobs.size() && logprobs.token_logprobs[i].present) {
      token.has_logprob = true;
      token.logprob = to_float(logprobs.token_logprobs[i].value);
    }
    if (wants.alternatives && logprobs.top_is_array && i < logprobs.top.size() && logprobs.top[i].is_object) {
      const SimpleTopObject& top = logprobs.top[i];
      for (std::size_t k = top.begin; k < top.end; ++k) {
        set_label_alternative(choice.add_alternative(token), logprobs.labels[k].label, logprobs.labels[k].logprob);
      }
      sort_best_first(choice.top(token));
    }
  }
  if (!logprobs.text_offset_is_array || !logprobs.text_offsets_integers) return nullptr;
  return &logprobs.text_offsets;
}

}  // namespace retrace::llm
