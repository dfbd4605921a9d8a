// The fast path's SAX handler (see fast_event.hpp), and the decoder's use of it.
#include "llm/fast_event.hpp"

#include <boost/json/basic_parser_impl.hpp>

#include "llm/decoder_impl.hpp"
#include "llm/fast_scan.hpp"
#include "llm/fast_scan_shape.hpp"

namespace retrace::llm {

namespace {

class SimpleEventHandler {
 public:
  static constexpr std::size_t max_object_size = std::size_t(-1);
  static constexpr std::size_t max_array_size = std::size_t(-1);
  static constexpr std::size_t max_key_size = std::size_t(-1);
  static constexpr std::size_t max_string_size = std::size_t(-1);

  // Choices of the last successful parse, in order.
  std::span<const SimpleChoice> choices() const { return {choices_.data(), used_}; }
  // The root was an object with a "choices" array (else read_openai() has a note to make).
  bool saw_choices_array() const { return saw_choices_array_; }
  const SimpleUsage& usage() const { return usage_; }

  void reset() {
    depth_ = 0;
    skip_ = 0;
    used_ = 0;
    saw_choices_array_ = false;
    root_seen_ = 0;
    key_ = Key::other;
    key_buffer_.clear();
    string_buffer_.clear();
    in_logprobs_ = false;
    usage_ = {};
  }

  bool on_document_begin(json::error_code&) { return true; }
  bool on_document_end(json::error_code&) { return true; }

  bool on_object_begin(json::error_code& ec) {
    if (skip_ > 0) return ++skip_, true;
    if (in_logprobs_) return logprobs_.object_begin() || give_up(ec);
    switch (top()) {
      case Level::document: return push(Level::root, ec);
      case Level::choices: {
        // More choices than a response keeps parts: the DOM path drops the rest with its note.
        if (used_ == kMaxParts) return give_up(ec);
        if (used_ == choices_.size()) choices_.emplace_back();
        SimpleChoice& added = choices_[used_++];
        added.index = 0;
        added.has_text = added.has_finish_reason = false;
        added.delta.reset();
        added.message.reset();
        added.seen = 0;
        added.logprobs.reset();
        added.has_token_ids = false;
        added.token_ids.clear();
        return push(Level::choice, ec);
      }
      case Level::choice:
        if (key_ == Key::delta || key_ == Key::message) {
          delta_open_ = key_ == Key::delta;
          message().is_object = true;
          return push(Level::message, ec);
        }
        if (key_ == Key::logprobs) {  // read by LogprobsReader until its object ends
          logprobs_.begin(current().logprobs);
          in_logprobs_ = true;
          return true;
        }
        if (key_ == Key::other) return ++skip_, true;
        return give_up(ec);
      case Level::root:
        if (key_ == Key::usage) {
          usage_.present = true;
          return push(Level::usage, ec);
        }
        [[fallthrough]];
      case Level::message:
        if (key_ == Key::other) return ++skip_, true;
        return give_up(ec);
      case Level::token_ids: return token_id(std::nullopt), ++skip_, true;  // not an id
      case Level::usage:
        if (key_ == Key::completion_tokens_details) {
          usage_.details_present = true;
          return push(Level::usage_details, ec);
        }
        return ++skip_, true;  // an object where a count goes: read_usage() takes it as absent
      case Level::usage_details: return ++skip_, true;
    }
    return give_up(ec);
  }
  bool on_object_end(std::size_t, json::error_code& ec) {
    if (skip_ == 0 && in_logprobs_) return logprobs_end(logprobs_.object_end(), ec);
    return end_container();
  }

  bool on_array_begin(json::error_code& ec) {
    if (skip_ > 0) return ++skip_, true;
    if (in_logprobs_) return logprobs_.array_begin() || give_up(ec);
    switch (top()) {
      case Level::root:
        if (key_ == Key::choices) return push(Level::choices, ec);
        if (key_ == Key::other) return ++skip_, true;
        return give_up(ec);
      case Level::choices: return ++skip_, true;  // not an object: read_openai() skips it
      case Level::choice:
        if (key_ == Key::token_ids) {
          current().has_token_ids = true;
          return push(Level::token_ids, ec);
        }
        [[fallthrough]];
      case Level::message:
        if (key_ == Key::other) return ++skip_, true;
        return give_up(ec);
      case Level::token_ids: return token_id(std::nullopt), ++skip_, true;
      case Level::usage:
      case Level::usage_details: return ++skip_, true;  // not a count: absent
      case Level::document: return give_up(ec);
    }
    return give_up(ec);
  }
  bool on_array_end(std::size_t, json::error_code& ec) {
    if (skip_ == 0 && in_logprobs_) return logprobs_end(logprobs_.array_end(), ec);
    return end_container();
  }

  bool on_key_part(json::string_view part, std::size_t, json::error_code&) {
    if (skip_ == 0) key_buffer_.append(part.data(), part.size());
    return true;
  }
  bool on_key(json::string_view part, std::size_t, json::error_code& ec) {
    if (skip_ > 0) return true;
    std::string_view name(part.data(), part.size());
    if (!key_buffer_.empty()) {
      key_buffer_.append(name);
      name = key_buffer_;
    }
    if (in_logprobs_) {
      const bool ok = logprobs_.key(name);
      key_buffer_.clear();
      return ok || give_up(ec);
    }
    key_ = classify(top(), name);
    key_buffer_.clear();
    if (key_ == Key::other) return true;
    std::uint32_t& seen = top() == Level::root            ? root_seen_
                          : top() == Level::choice        ? current().seen
                          : top() == Level::usage         ? usage_seen_
                          : top() == Level::usage_details ? details_seen_
                                                          : message_seen_;
    if (seen & bit(key_)) return give_up(ec);  // which duplicate wins is the DOM's business
    seen |= bit(key_);
    return true;
  }

  bool on_string_part(json::string_view part, std::size_t, json::error_code&) {
    if (skip_ == 0) string_buffer_.append(part.data(), part.size());
    return true;
  }
  bool on_string(json::string_view part, std::size_t, json::error_code& ec) {
    if (skip_ > 0) return true;
    if (top() == Level::document) return give_up(ec);
    std::string_view value(part.data(), part.size());
    if (!string_buffer_.empty()) {
      string_buffer_.append(value);
      value = string_buffer_;
    }
    if (in_logprobs_) {
      const bool ok = logprobs_.string(value);
      string_buffer_.clear();
      return ok || give_up(ec);
    }
    if (top() == Level::token_ids) {
      string_buffer_.clear();
      return token_id(std::nullopt), true;
    }
    if (in_usage()) {  // a string where a count goes: absent
      string_buffer_.clear();
      return true;
    }
    bool ok = true;
    switch (key_) {
      case Key::object: ok = top() != Level::root || value != "error"; break;
      case Key::text:
        current().has_text = true;
        current().text.assign(value);
        break;
      case Key::finish_reason:
        current().has_finish_reason = true;
        current().finish_reason.assign(value);
        break;
      case Key::content:
        message().has_content = true;
        message().content.assign(value);
        break;
      case Key::other:
      case Key::usage:
      case Key::logprobs:
      case Key::token_ids:
      case Key::delta:
      case Key::message:
        break;  // a string where read_openai() wants an object or array: it ignores it too
      default: ok = false;  // index, error, reasoning, refusal, tool_calls
    }
    string_buffer_.clear();
    return ok || give_up(ec);
  }

  bool on_number_part(json::string_view, json::error_code&) { return true; }
  bool on_int64(std::int64_t value, json::string_view, json::error_code& ec) {
    if (skip_ == 0 && in_logprobs_) return logprobs_.int64(value) || give_up(ec);
    if (skip_ == 0 && top() == Level::token_ids) return token_id(value), true;
    if (skip_ == 0 && in_usage()) return count(value), true;
    if (skip_ > 0 || key_ != Key::index) return scalar(ec);
    if (value < 0 || static_cast<std::uint64_t>(value) >= kMaxParts) return give_up(ec);
    current().index = value;
    return true;
  }
  bool on_uint64(std::uint64_t value, json::string_view, json::error_code& ec) {
    if (skip_ == 0 && in_logprobs_) return logprobs_.uint64(value) || give_up(ec);
    if (skip_ == 0 && top() == Level::token_ids) return token_id(std::nullopt), true;  // above INT64_MAX
    if (skip_ == 0 && in_usage()) return count(std::nullopt), true;                  // the same
    return scalar(ec);
  }
  bool on_double(double value, json::string_view, json::error_code& ec) {
    if (skip_ == 0 && in_logprobs_) return logprobs_.real(value) || give_up(ec);
    if (skip_ == 0 && top() == Level::token_ids) return token_id(integral_double(value)), true;
    if (skip_ == 0 && in_usage()) return count(integral_double(value)), true;
    return scalar(ec);
  }
  bool on_bool(bool, json::error_code& ec) {
    if (skip_ == 0 && in_logprobs_) return logprobs_.boolean() || give_up(ec);
    if (skip_ == 0 && top() == Level::token_ids) return token_id(std::nullopt), true;
    return scalar(ec);
  }
  bool on_null(json::error_code& ec) {
    if (skip_ == 0 && in_logprobs_) return logprobs_.null() || give_up(ec);
    if (skip_ == 0 && top() == Level::token_ids) return token_id(std::nullopt), true;
    // null is "absent" for every key read_openai() looks at ("index": null is index 0).
    if (skip_ == 0 && top() == Level::document) return give_up(ec);
    return true;
  }
  bool on_comment_part(json::string_view, json::error_code&) { return true; }
  bool on_comment(json::string_view, json::error_code&) { return true; }

 private:
  enum class Level : std::uint8_t { document, root, choices, choice, message, token_ids, usage, usage_details };
  enum class Key : std::uint8_t {
    other, choices, usage, error, object,                                     // root
    index, text, delta, message, logprobs, token_ids, finish_reason,          // choice
    content, reasoning, reasoning_content, refusal, tool_calls,               // message
    prompt_tokens, completion_tokens, total_tokens, reasoning_tokens,         // usage
    completion_tokens_details,
  };
  static constexpr std::uint32_t bit(Key key) { return 1u << static_cast<unsigned>(key); }

  static Key classify(Level level, std::string_view name) {
    switch (level) {
      case Level::root:
        if (name == "choices") return Key::choices;
        if (name == "usage") return Key::usage;
        if (name == "error") return Key::error;
        if (name == "object") return Key::object;
        return Key::other;
      case Level::choice:
        if (name == "index") return Key::index;
        if (name == "text") return Key::text;
        if (name == "delta") return Key::delta;
        if (name == "message") return Key::message;
        if (name == "logprobs") return Key::logprobs;
        if (name == "token_ids") return Key::token_ids;
        if (name == "finish_reason") return Key::finish_reason;
        return Key::other;
      case Level::message:
        if (name == "content") return Key::content;
        if (name == "reasoning") return Key::reasoning;
        if (name == "reasoning_content") return Key::reasoning_content;
        if (name == "refusal") return Key::refusal;
        if (name == "tool_calls") return Key::tool_calls;
        return Key::other;
      case Level::usage:
        if (name == "prompt_tokens") return Key::prompt_tokens;
        if (name == "completion_tokens") return Key::completion_tokens;
        if (name == "total_tokens") return Key::total_tokens;
        if (name == "reasoning_tokens") return Key::reasoning_tokens;
        if (name == "completion_tokens_details") return Key::completion_tokens_details;
        return Key::other;
      case Level::usage_details:
        if (name == "reasoning_tokens") return Key::reasoning_tokens;
        return Key::other;
      case Level::document:
      case Level::choices:
      case Level::token_ids: break;
    }
    return Key::other;
  }

  // A number or bool: harmless for keys read_openai() ignores or reads as a string (it takes
  // a non-string as absent), decisive for the others.
  bool scalar(json::error_code& ec) {
    if (skip_ > 0) return true;
    switch (top()) {
      case Level::document: return give_up(ec);
      case Level::choices: return true;
      case Level::root: return key_ != Key::error || give_up(ec);
      case Level::choice: return (key_ != Key::index) || give_up(ec);
      case Level::message: return true;
      case Level::token_ids: return true;  // handled before
      case Level::usage:
      case Level::usage_details: return true;  // a bool or null where a count goes: absent
    }
    return true;
  }
  // One "token_ids" element: token_id_of() its integer value, or of nullopt when it is not one.
  void token_id(std::optional<std::int64_t> integer) { current().token_ids.push_back(token_id_of(integer)); }
  bool in_usage() const { return top() == Level::usage || top() == Level::usage_details; }
  // One number under "usage": integer_of()'s rule has already made it an integer or nullopt.
  void count(std::optional<std::int64_t> integer) {
    if (top() == Level::usage_details) {
      if (key_ == Key::reasoning_tokens) usage_.reasoning_tokens_details = integer;
      return;
    }
    switch (key_) {
      case Key::prompt_tokens: usage_.prompt_tokens = integer; break;
      case Key::completion_tokens: usage_.completion_tokens = integer; break;
      case Key::total_tokens: usage_.total_tokens = integer; break;
      case Key::reasoning_tokens: usage_.reasoning_tokens_top = integer; break;
      default: break;  // another key, or a number where the details object goes: absent
    }
  }

  bool push(Level level, json::error_code& ec) {
    if (depth_ + 1 >= kMaxLevels) return give_up(ec);
    levels_[++depth_] = level;
    if (level == Level::message) message_seen_ = 0;
    if (level == Level::usage) usage_seen_ = 0;
    if (level == Level::usage_details) details_seen_ = 0;
    if (level == Level::choices) saw_choices_array_ = true;
    key_ = Key::other;
    return true;
  }
  bool end_container() {
    if (skip_ > 0) return --skip_, true;
    --depth_;
    // In an enclosing object a key comes next; in an enclosing array values have no key.
    key_ = Key::other;
    return true;
  }
  Level top() const { return levels_[depth_]; }
  SimpleChoice& current() { return choices_[used_ - 1]; }
  SimpleMessage& message() { return delta_open_ ? current().delta : current().message; }

  // The end of a container inside "logprobs"; the last one ends the reader's turn.
  bool logprobs_end(bool ok, json::error_code& ec) {
    if (!ok) return give_up(ec);
    if (logprobs_.done()) {
      in_logprobs_ = false;
      key_ = Key::other;
    }
    return true;
  }

  bool give_up(json::error_code& ec) {
    ec = json::make_error_code(json::error::exception);
    return false;
  }

  static constexpr int kMaxLevels = 8;
  Level levels_[kMaxLevels] = {Level::document};
  int depth_ = 0;
  int skip_ = 0;  // depth inside a value nobody reads
  Key key_ = Key::other;
  bool delta_open_ = false;  // the open message level is "delta" (else "message")
  bool saw_choices_array_ = false;
  std::uint32_t root_seen_ = 0;
  std::uint32_t message_seen_ = 0;
  std::uint32_t usage_seen_ = 0;
  std::uint32_t details_seen_ = 0;
  SimpleUsage usage_;
  std::vector<SimpleChoice> choices_;
  std::size_t used_ = 0;
  std::string key_buffer_;
  std::string string_buffer_;
  bool in_logprobs_ = false;  // inside a choice's "logprobs" object: events go to logprobs_
  LogprobsReader logprobs_;
};

}  // namespace

struct FastEventParser::Parser {
  Parser(const json::parse_options& options, bool scan)
      : sax(options), scan(scan && scanner_models(options)), max_depth(options.max_depth) {}
  json::basic_parser<SimpleEventHandler> sax;
  bool scan;  // JsonScanner first (fast_scan.hpp), basic_parser where it stops
  std::size_t max_depth;
  std::string unescaped;  // the scanner's buffer for escaped strings
  ShapeReader shape;      // before the scanner: the shape streams repeat, read straight
  const SimpleUsage* usage = &sax.handler().usage();  // the last successful parse's
  std::size_t scanned = 0, shaped = 0;
};

FastEventParser::FastEventParser(const json::parse_options& options, bool scan)
    : parser_(std::make_unique<Parser>(options, scan)) {}
FastEventParser::~FastEventParser() = default;

std::optional<std::span<const SimpleChoice>> FastEventParser::parse(std::string_view data) {
  json::basic_parser<SimpleEventHandler>& sax = parser_->sax;
  SimpleEventHandler& simple = sax.handler();
  if (parser_->scan) {
    if (parser_->shape.read(data)) {
      ++parser_->scanned;
      ++parser_->shaped;
      parser_->usage = &parser_->shape.usage();
      return parser_->shape.choices();
    }
    parser_->usage = &simple.usage();
    simple.reset();
    if (JsonScanner<SimpleEventHandler>(simple, parser_->unescaped, parser_->max_depth).run(data)) {
      ++parser_->scanned;
      if (!simple.saw_choices_array()) return std::nullopt;
      return simple.choices();
    }
  }
  parser_->usage = &simple.usage();
  // The parser decides: anything the scanner stopped at, from a reset handler.
  sax.reset();
  simple.reset();
  json::error_code ec;
  const std::size_t used = sax.write_some(false, data.data(), data.size(), ec);
  if (ec || used != data.size() || !simple.saw_choices_array()) return std::nullopt;
  return simple.choices();
}

void FastEventParser::skip_logprob_values(bool skip) { parser_->shape.skip_values(skip); }

std::size_t FastEventParser::scanned() const { return parser_->scanned; }
std::size_t FastEventParser::shaped() const { return parser_->shaped; }

const SimpleUsage& FastEventParser::usage() const { return *parser_->usage; }

bool ResponseDecoder::Impl::read_simple_event(std::string_view data, std::int64_t offset_ns, bool streamed) {
  if (!fast_path || (dialect != Dialect::openai_completions && dialect != Dialect::openai_chat)) return false;
  const auto parsed_choices = fast_parser.parse(data);
  if (!parsed_choices) {
    if (++fast_misses == kFastPathMisses) fast_path = false;
    return false;
  }
  fast_misses = 0;
  ++fast_events;
  for (const SimpleChoice& parsed : *parsed_choices) {
    Choice& choice = choice_with_index(static_cast<std::uint32_t>(parsed.index));
    std::optional<std::string_view> text;
    if (parsed.has_text) text = parsed.text;
    // As read_openai(): a stream's "delta" first, else "message"; a whole answer's the other way.
    const SimpleMessage& first_choice = streamed ? parsed.delta : parsed.message;
    const SimpleMessage& second_choice = streamed ? parsed.message : parsed.delta;
    const SimpleMessage* message = first_choice.is_object    ? &first_choice
                                   : second_choice.is_object ? &second_choice
                                                             : nullptr;
    if (message) text = message->has_content ? std::optional<std::string_view>(message->content) : std::nullopt;
    // As read_tokens(): logprobs first, else the text as one delta token.
    bytes_from.clear();
    const std::size_t first = choice.tokens.size();
    const std::vector<std::int64_t>* text_offsets = read_simple_logprobs(choice, parsed.logprobs, offset_ns);
    if (parsed.has_token_ids) apply_id_array(choice, first, std::span<const std::int32_t>(parsed.token_ids), offset_ns);
    if (choice.tokens.size() != first) {
      settle_bytes(choice, first, text, text_offsets);
    } else if (text && !text->empty()) {
      add_token(choice, offset_ns, BytesFrom::token_text).bytes.assign(*text);
    }
    if (parsed.has_finish_reason) choice.finish_reason.assign(parsed.finish_reason);
  }
  read_simple_usage(fast_parser.usage());
  return true;
}

// As read_usage().
void ResponseDecoder::Impl::read_simple_usage(const SimpleUsage& read) {
  if (!read.present) return;
  if (read.prompt_tokens) usage.prompt_tokens = *read.prompt_tokens;
  if (read.completion_tokens) usage.completion_tokens = *read.completion_tokens;
  if (read.total_tokens) usage.total_tokens = *read.total_tokens;
  const auto& reasoning = read.details_present ? read.reasoning_tokens_details : read.reasoning_tokens_top;
  if (reasoning) usage.reasoning_tokens = *reasoning;
}

}  // namespace retrace::llm
