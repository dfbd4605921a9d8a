// Response decoding: one SSE event or body at a time into per-choice token streams.
//
// Shapes handled (data of one SSE event, or a whole non-streamed body):
//   OpenAI completions  {"choices":[{"index","text","logprobs","finish_reason","token_ids"}],"usage"}
//   OpenAI chat         {"choices":[{"index","delta"|"message":{"content"},"logprobs",...}],"usage"}
//     logprobs, legacy:   {"tokens":[..],"token_logprobs":[..],"top_logprobs":[{tok:lp}],"text_offset":[..]}
//     logprobs, chat:     {"content":[{"token","logprob","bytes":[..],"id"?,"top_logprobs":[..]}]}
//     vLLM: "token_id:N" token strings (return_tokens_as_token_ids); "token_ids":[..] per choice
//   llama.cpp native    {"index","content","tokens":[..],"completion_probabilities":[..],"stop",
//                        "stop_type","tokens_predicted","tokens_evaluated"}
//   TGI                 {"token":{"id","text","logprob","special"},"top_tokens","generated_text",
//                        "details"}  /  {"generated_text","details":{"tokens":[..],...}}
//
// Bytes of a token: the `bytes` array where the server gives one, else the token's text; where
// tokens carry no text (ids only, "token_id:N") the event's text delta is split between them by
// `text_offset` when present, given whole to a single token, or else put on the first token of
// the event (noted), so that the concatenated bytes always equal the text the server sent.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>

#include <boost/json.hpp>
#include <boost/json/basic_parser_impl.hpp>

#include "llm/llm.hpp"

namespace retrace::llm {

namespace json = boost::json;

namespace {

constexpr std::size_t kMaxChoices = 4096;  // a larger "index" is corrupt data, not a choice
constexpr std::size_t kMaxNotes = 8;
constexpr std::size_t kScratchBytes = 16 * 1024;

const json::value* field(const json::object& object, std::string_view key) {
  return object.if_contains(key);
}
const json::object* object_field(const json::object& object, std::string_view key) {
  const json::value* value = object.if_contains(key);
  return value ? value->if_object() : nullptr;
}
const json::array* array_field(const json::object& object, std::string_view key) {
  const json::value* value = object.if_contains(key);
  return value ? value->if_array() : nullptr;
}
std::optional<std::string_view> string_field(const json::object& object, std::string_view key) {
  const json::value* value = object.if_contains(key);
  if (!value) return std::nullopt;
  if (const json::string* text = value->if_string()) return std::string_view(*text);
  return std::nullopt;
}
std::optional<double> number_of(const json::value& value) {
  if (!value.is_number()) return std::nullopt;
  json::error_code ec;
  const double number = value.to_number<double>(ec);
  if (ec) return std::nullopt;
  return number;
}
std::optional<double> number_field(const json::object& object, std::string_view key) {
  const json::value* value = object.if_contains(key);
  return value ? number_of(*value) : std::nullopt;
}
std::optional<std::int64_t> integer_of(const json::value& value) {
  if (const std::int64_t* integer = value.if_int64()) return *integer;
  if (const std::uint64_t* unsigned_integer = value.if_uint64()) {
    if (*unsigned_integer <= static_cast<std::uint64_t>(INT64_MAX)) return static_cast<std::int64_t>(*unsigned_integer);
    return std::nullopt;
  }
  if (const double* real = value.if_double()) {
    if (std::isfinite(*real) && *real == std::floor(*real) && std::fabs(*real) < 9e15) {
      return static_cast<std::int64_t>(*real);
    }
  }
  return std::nullopt;
}
std::optional<std::int64_t> integer_field(const json::object& object, std::string_view key) {
  const json::value* value = object.if_contains(key);
  return value ? integer_of(*value) : std::nullopt;
}
std::int32_t token_id_of(const json::value& value) {
  const auto integer = integer_of(value);
  if (!integer || *integer < 0 || *integer > INT32_MAX) return -1;
  return static_cast<std::int32_t>(*integer);
}
bool bool_field(const json::object& object, std::string_view key) {
  const json::value* value = object.if_contains(key);
  return value && value->is_bool() && value->get_bool();
}

// vLLM's return_tokens_as_token_ids spelling of a token: "token_id:123".
std::optional<std::int32_t> parse_token_id_string(std::string_view text) {
  constexpr std::string_view prefix = "token_id:";
  if (text.size() <= prefix.size() || text.substr(0, prefix.size()) != prefix) return std::nullopt;
  std::int64_t id = 0;
  for (char c : text.substr(prefix.size())) {
    if (c < '0' || c > '9') return std::nullopt;
    id = id * 10 + (c - '0');
    if (id > INT32_MAX) return std::nullopt;
  }
  return static_cast<std::int32_t>(id);
}

// "bytes:\xe5\x85" as the bytes it names; nullopt when `text` is not exactly that form.
std::optional<std::string> parse_bytes_label(std::string_view text) {
  constexpr std::string_view prefix = "bytes:";
  if (text.size() <= prefix.size() || text.substr(0, prefix.size()) != prefix) return std::nullopt;
  text.remove_prefix(prefix.size());
  if (text.size() % 4 != 0) return std::nullopt;
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string bytes;
  for (std::size_t at = 0; at < text.size(); at += 4) {
    const int high = hex(text[at + 2]);
    const int low = hex(text[at + 3]);
    if (text[at] != '\\' || text[at + 1] != 'x' || high < 0 || low < 0) return std::nullopt;
    bytes.push_back(static_cast<char>(high * 16 + low));
  }
  return bytes;
}

// A `bytes` array ([105,115,...]) as bytes; nullopt when absent or not all 0..255.
std::optional<std::string> bytes_array(const json::object& object) {
  const json::array* array = array_field(object, "bytes");
  if (!array) return std::nullopt;
  std::string bytes;
  bytes.reserve(array->size());
  for (const json::value& element : *array) {
    const auto byte = integer_of(element);
    if (!byte || *byte < 0 || *byte > 255) return std::nullopt;
    bytes.push_back(static_cast<char>(*byte));
  }
  return bytes;
}

// Byte offset in `text` of code point `index` (Python str indexing; an invalid byte counts as
// one code point), or npos when the text is shorter.
std::size_t byte_offset_of_code_point(std::string_view text, std::int64_t index) {
  std::size_t at = 0;
  for (std::int64_t seen = 0; seen < index; ++seen) {
    if (at >= text.size()) return std::string_view::npos;
    const auto lead = static_cast<unsigned char>(text[at]);
    std::size_t length = lead < 0x80 ? 1 : (lead >> 5) == 0x6 ? 2 : (lead >> 4) == 0xE ? 3 : (lead >> 3) == 0x1E ? 4 : 1;
    std::size_t valid = 1;
    while (valid < length && at + valid < text.size() &&
           (static_cast<unsigned char>(text[at + valid]) & 0xC0) == 0x80) {
      ++valid;
    }
    at += valid == length ? length : 1;
  }
  return at;
}

std::string_view finish_reason_of_llamacpp(std::string_view stop_type) {
  if (stop_type == "limit") return "length";
  if (stop_type == "eos" || stop_type == "word") return "stop";
  return stop_type == "none" ? "" : stop_type;
}

std::string_view finish_reason_of_tgi(std::string_view reason) {
  if (reason == "eos_token" || reason == "stop_sequence") return "stop";
  return reason;  // "length" is already the OpenAI spelling
}

// Doubles from the wire clamped into float range (an out-of-range cast is undefined behaviour).
float to_float(double value) {
  if (std::isnan(value)) return 0;
  return static_cast<float>(std::clamp(value, static_cast<double>(std::numeric_limits<float>::lowest()),
                                       static_cast<double>(std::numeric_limits<float>::max())));
}

// "logprob", or the log of "prob" (llama.cpp's probability spellings). A zero probability maps
// to the lowest float rather than -inf, so that margins computed from it stay finite.
std::optional<float> logprob_of(const json::object& object) {
  if (const auto logprob = number_field(object, "logprob")) {
    return to_float(*logprob);
  }
  if (const auto probability = number_field(object, "prob")) {
    if (!(*probability > 0)) return std::numeric_limits<float>::lowest();
    return to_float(std::log(std::min(*probability, 1.0)));
  }
  return std::nullopt;
}

// Where a token's bytes came from, to decide how far to trust them against the text delta.
enum class BytesFrom : std::uint8_t { bytes_array, token_text, unknown };

// ------------------------------------------------------------------------------------------------
// Fast path for the common streamed OpenAI event: a text delta and maybe a finish reason, e.g.
//   {"id":..,"object":"text_completion",..,"choices":[{"index":0,"text":" the","logprobs":null,
//    "finish_reason":null}]}
// A SAX pass (no DOM, no allocation once warm) picks out exactly what read_openai() would use.
// Anything it does not model with certainty (logprobs, token ids, usage, errors, tool calls,
// reasoning, duplicate keys, odd index values, ...) makes it give up, and the event goes through
// the general DOM path instead, so the decoded result is the same either way (a test compares the
// two paths event by event).

struct SimpleMessage {
  bool is_object = false;  // "delta"/"message" present as an object
  bool has_content = false;
  std::string content;
};

struct SimpleChoice {
  std::int64_t index = 0;
  bool has_text = false;
  std::string text;
  bool has_finish_reason = false;
  std::string finish_reason;
  SimpleMessage delta, message;
  std::uint32_t seen = 0;  // bit per key already seen, to give up on duplicates
};

class SimpleEventHandler {
 public:
  static constexpr std::size_t max_object_size = std::size_t(-1);
  static constexpr std::size_t max_array_size = std::size_t(-1);
  static constexpr std::size_t max_key_size = std::size_t(-1);
  static constexpr std::size_t max_string_size = std::size_t(-1);

  // Choices of the last successful parse, in order: [0, choice_count()).
  const SimpleChoice& choice(std::size_t i) const { return choices_[i]; }
  std::size_t choice_count() const { return used_; }
  // The root was an object with a "choices" array (else read_openai() has a note to make).
  bool saw_choices_array() const { return saw_choices_array_; }

  void reset() {
    depth_ = 0;
    skip_ = 0;
    used_ = 0;
    saw_choices_array_ = false;
    root_seen_ = 0;
    key_ = Key::other;
    key_buffer_.clear();
    string_buffer_.clear();
  }

  bool on_document_begin(json::error_code&) { return true; }
  bool on_document_end(json::error_code&) { return true; }

  bool on_object_begin(json::error_code& ec) {
    if (skip_ > 0) return ++skip_, true;
    switch (top()) {
      case Level::document: return push(Level::root, ec);
      case Level::choices: {
        if (used_ == choices_.size()) choices_.emplace_back();
        SimpleChoice& added = choices_[used_++];
        added.index = 0;
        added.has_text = added.has_finish_reason = false;
        added.delta = added.message = {};  // keeps no capacity; messages are rare on this path
        added.seen = 0;
        return push(Level::choice, ec);
      }
      case Level::choice:
        if (key_ == Key::delta || key_ == Key::message) {
          delta_open_ = key_ == Key::delta;
          message().is_object = true;
          return push(Level::message, ec);
        }
        if (key_ == Key::other) return ++skip_, true;
        return give_up(ec);
      case Level::root:
      case Level::message:
        if (key_ == Key::other) return ++skip_, true;
        return give_up(ec);
    }
    return give_up(ec);
  }
  bool on_object_end(std::size_t, json::error_code&) { return end_container(); }

  bool on_array_begin(json::error_code& ec) {
    if (skip_ > 0) return ++skip_, true;
    switch (top()) {
      case Level::root:
        if (key_ == Key::choices) return push(Level::choices, ec);
        if (key_ == Key::other) return ++skip_, true;
        return give_up(ec);
      case Level::choices: return ++skip_, true;  // not an object: read_openai() skips it
      case Level::choice:
      case Level::message:
        if (key_ == Key::other) return ++skip_, true;
        return give_up(ec);
      case Level::document: return give_up(ec);
    }
    return give_up(ec);
  }
  bool on_array_end(std::size_t, json::error_code&) { return end_container(); }

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
    key_ = classify(top(), name);
    key_buffer_.clear();
    if (key_ == Key::other) return true;
    std::uint32_t& seen = top() == Level::root ? root_seen_
                          : top() == Level::choice ? current().seen
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
    if (skip_ > 0 || key_ != Key::index) return scalar(ec);
    if (value < 0 || static_cast<std::uint64_t>(value) >= kMaxChoices) return give_up(ec);
    current().index = value;
    return true;
  }
  bool on_uint64(std::uint64_t, json::string_view, json::error_code& ec) { return scalar(ec); }
  bool on_double(double, json::string_view, json::error_code& ec) { return scalar(ec); }
  bool on_bool(bool, json::error_code& ec) { return scalar(ec); }
  bool on_null(json::error_code& ec) {
    // null is "absent" for every key read_openai() looks at ("index": null is index 0).
    if (skip_ == 0 && top() == Level::document) return give_up(ec);
    return true;
  }
  bool on_comment_part(json::string_view, json::error_code&) { return true; }
  bool on_comment(json::string_view, json::error_code&) { return true; }

 private:
  enum class Level : std::uint8_t { document, root, choices, choice, message };
  enum class Key : std::uint8_t {
    other, choices, usage, error, object,                                     // root
    index, text, delta, message, logprobs, token_ids, finish_reason,          // choice
    content, reasoning, reasoning_content, refusal, tool_calls,               // message
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
      case Level::document:
      case Level::choices: break;
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
    }
    return true;
  }

  bool push(Level level, json::error_code& ec) {
    if (depth_ + 1 >= kMaxLevels) return give_up(ec);
    levels_[++depth_] = level;
    if (level == Level::message) message_seen_ = 0;
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
  std::vector<SimpleChoice> choices_;
  std::size_t used_ = 0;
  std::string key_buffer_;
  std::string string_buffer_;
};

}  // namespace

struct ResponseDecoder::Impl {
  Dialect dialect;
  bool sniffed = false;  // dialect was unknown and got guessed from the response
  bool finished = false;
  std::size_t events_seen = 0;
  std::size_t events_after_end = 0;
  std::vector<Choice> choices;
  Usage usage;
  std::vector<std::string> notes;
  std::size_t notes_dropped = 0;
  bool noted_split_unknown = false;
  bool noted_text_mismatch = false;

  // Parsing: one parser and one arena reused for every event (they are many and small).
  std::unique_ptr<unsigned char[]> scratch{new unsigned char[kScratchBytes]};
  json::monotonic_resource arena{scratch.get(), kScratchBytes};
  json::parser parser{json::storage_ptr(), make_options()};
  bool fast_path = true;
  json::basic_parser<SimpleEventHandler> simple_parser{make_options()};

  // Per-event scratch, reused.
  std::vector<BytesFrom> bytes_from;
  std::string joined_text;

  static json::parse_options make_options() {
    json::parse_options options;
    options.allow_invalid_utf8 = true;  // token bytes are recorded as given, not judged
    options.max_depth = 64;
    return options;
  }

  Impl(Dialect d, bool allow_fast_path) : dialect(d), fast_path(allow_fast_path) {}

  void note(std::string message) {
    if (notes.size() < kMaxNotes) {
      notes.push_back(std::move(message));
    } else {
      ++notes_dropped;
    }
  }
  std::string where() const { return "event " + std::to_string(events_seen - 1); }

  // A streamed event of the simple shape (see SimpleEventHandler), decoded without a DOM; false
  // when it is not one, having changed nothing.
  bool read_simple_event(std::string_view data, std::int64_t offset_ns) {
    if (!fast_path || (dialect != Dialect::openai_completions && dialect != Dialect::openai_chat)) return false;
    simple_parser.reset();
    SimpleEventHandler& simple = simple_parser.handler();
    simple.reset();
    json::error_code ec;
    const std::size_t used = simple_parser.write_some(false, data.data(), data.size(), ec);
    if (ec || used != data.size() || !simple.saw_choices_array()) return false;
    for (std::size_t i = 0; i < simple.choice_count(); ++i) {
      const SimpleChoice& parsed = simple.choice(i);
      Choice& choice = choice_with_index(static_cast<std::uint32_t>(parsed.index));
      std::optional<std::string_view> text;
      if (parsed.has_text) text = parsed.text;
      // As read_openai() for a stream: "delta" first, else "message".
      const SimpleMessage* message = parsed.delta.is_object     ? &parsed.delta
                                     : parsed.message.is_object ? &parsed.message
                                                                : nullptr;
      if (message) text = message->has_content ? std::optional<std::string_view>(message->content) : std::nullopt;
      bytes_from.clear();
      if (text && !text->empty()) add_token(choice, offset_ns, BytesFrom::token_text).bytes.assign(*text);
      if (parsed.has_finish_reason) choice.finish_reason.assign(parsed.finish_reason);
    }
    return true;
  }

  // Parses `text` into the arena; nullopt (and a note naming `what`) when it is not JSON.
  std::optional<json::value> parse(std::string_view text, const std::string& what) {
    arena.release();
    parser.reset(json::storage_ptr(&arena));
    json::error_code ec;
    parser.write(text.data(), text.size(), ec);
    if (ec) {
      std::string excerpt(text.substr(0, 60));
      for (char& c : excerpt) {
        if (static_cast<unsigned char>(c) < 0x20) c = ' ';
      }
      note(what + ": not JSON (" + ec.message() + "): " + excerpt + (text.size() > 60 ? "..." : ""));
      return std::nullopt;
    }
    return parser.release();
  }

  Choice* choice_at(const json::object& object) {
    std::int64_t index = 0;
    if (const json::value* value = field(object, "index"); value && !value->is_null()) {
      const auto parsed = integer_of(*value);
      if (!parsed || *parsed < 0 || static_cast<std::uint64_t>(*parsed) >= kMaxChoices) {
        note(where() + ": choice index out of range: " + json::serialize(*value));
        return nullptr;
      }
      index = *parsed;
    }
    for (Choice& choice : choices) {
      if (choice.index == index) return &choice;
    }
    choices.emplace_back().index = static_cast<std::uint32_t>(index);
    return &choices.back();
  }

  void read_usage(const json::object& object) {
    const json::object* usage_object = object_field(object, "usage");
    if (!usage_object) return;
    if (const auto n = integer_field(*usage_object, "prompt_tokens")) usage.prompt_tokens = *n;
    if (const auto n = integer_field(*usage_object, "completion_tokens")) usage.completion_tokens = *n;
    if (const auto n = integer_field(*usage_object, "total_tokens")) usage.total_tokens = *n;
  }

  // A server error inside a 200 stream: {"error": {...}|"..."} or vLLM's {"object":"error"}.
  bool read_error(const json::object& object) {
    const json::value* error = field(object, "error");
    const auto kind = string_field(object, "object");
    if ((!error || error->is_null()) && kind != "error") return false;
    std::string message;
    if (error && error->is_string()) {
      message = std::string(error->get_string());
    } else if (error && error->is_object()) {
      message = std::string(string_field(error->get_object(), "message").value_or(""));
    } else {
      message = std::string(string_field(object, "message").value_or(""));
    }
    note(where() + ": server error: " + message.substr(0, 200));
    return true;
  }

  // ------------------------------------------------------------------------------------------
  // Text of new tokens. The tokens appended from `first` on belong to one event (or body) whose
  // text is `delta` (nullopt: the server sent none to compare with).

  void settle_bytes(Choice& choice, std::size_t first, std::optional<std::string_view> delta,
                    const json::array* text_offsets) {
    const std::size_t count = choice.tokens.size() - first;
    if (count == 0 || !delta) return;
    bool all_known = true;
    bool any_text = false;
    std::size_t known_bytes = 0;
    for (std::size_t i = 0; i < count; ++i) {
      all_known &= bytes_from[i] != BytesFrom::unknown;
      any_text |= bytes_from[i] == BytesFrom::token_text;
      known_bytes += choice.tokens[first + i].bytes.size();
    }
    if (all_known) {
      if (!any_text) return;  // byte arrays are the ground truth, whatever the text says
      if (known_bytes == delta->size()) {
        std::size_t at = 0;
        bool same = true;
        for (std::size_t i = 0; i < count && same; ++i) {
          const std::string& bytes = choice.tokens[first + i].bytes;
          same = delta->compare(at, bytes.size(), bytes) == 0;
          at += bytes.size();
        }
        if (same) return;
      }
    }
    if (count == 1) {
      choice.tokens[first].bytes.assign(*delta);
      return;
    }
    if (split_by_offsets(choice, first, count, *delta, text_offsets)) return;
    if (all_known) {
      if (!noted_text_mismatch) {
        noted_text_mismatch = true;
        note(where() + ": choice " + std::to_string(choice.index) +
             ": token texts differ from the text delta; kept the token texts");
      }
      return;
    }
    if (!noted_split_unknown) {
      noted_split_unknown = true;
      note(where() + ": choice " + std::to_string(choice.index) + ": " + std::to_string(count) +
           " tokens share one text delta with no per-token text; the text is on the first token");
    }
    choice.tokens[first].bytes.assign(*delta);
    for (std::size_t i = 1; i < count; ++i) choice.tokens[first + i].bytes.clear();
  }

  bool split_by_offsets(Choice& choice, std::size_t first, std::size_t count, std::string_view delta,
                        const json::array* text_offsets) {
    if (!text_offsets || text_offsets->size() != count) return false;
    const auto base = integer_of((*text_offsets)[0]);
    if (!base) return false;
    std::vector<std::size_t> cuts;
    cuts.reserve(count + 1);
    for (std::size_t i = 0; i < count; ++i) {
      const auto offset = integer_of((*text_offsets)[i]);
      if (!offset || *offset < *base) return false;
      const std::size_t cut = byte_offset_of_code_point(delta, *offset - *base);
      if (cut == std::string_view::npos || (!cuts.empty() && cut < cuts.back())) return false;
      cuts.push_back(cut);
    }
    cuts.push_back(delta.size());
    for (std::size_t i = 0; i < count; ++i) {
      choice.tokens[first + i].bytes.assign(delta.substr(cuts[i], cuts[i + 1] - cuts[i]));
    }
    return true;
  }

  Token& add_token(Choice& choice, std::int64_t offset_ns, BytesFrom from) {
    Token& token = choice.tokens.emplace_back();
    token.offset_ns = offset_ns;
    bytes_from.push_back(from);
    return token;
  }

  // A token spelled as text: "token_id:N" gives an id and unknown bytes; "bytes:\xNN..." (the
  // OpenAI/tiktoken spelling of a piece of a UTF-8 character) gives those bytes.
  BytesFrom set_token_text(Token& token, std::string_view text) {
    if (const auto id = parse_token_id_string(text)) {
      token.id = *id;
      return BytesFrom::unknown;
    }
    if (auto bytes = parse_bytes_label(text)) {
      token.bytes = std::move(*bytes);
      return BytesFrom::bytes_array;
    }
    token.bytes.assign(text);
    return BytesFrom::token_text;
  }

  static void sort_best_first(std::vector<Alternative>& top) {
    std::stable_sort(top.begin(), top.end(),
                     [](const Alternative& a, const Alternative& b) { return a.logprob > b.logprob; });
  }

  // Chat-shaped entries: [{token, logprob, bytes?, id?, top_logprobs: [...]}] (OpenAI chat, vLLM
  // chat, llama.cpp on both /v1 endpoints and natively in completion_probabilities). llama.cpp
  // spells it differently with post_sampling_probs ({prob, top_probs}) and before late 2024
  // ({content, probs: [{tok_str, prob}]}); those are read too.
  void read_content_logprobs(Choice& choice, const json::array& entries, std::int64_t offset_ns) {
    for (const json::value& entry_value : entries) {
      const json::object* entry = entry_value.if_object();
      if (!entry) continue;
      Token& token = add_token(choice, offset_ns, BytesFrom::unknown);
      BytesFrom& from = bytes_from.back();
      auto text = string_field(*entry, "token");
      if (!text) text = string_field(*entry, "content");
      if (text) from = set_token_text(token, *text);
      if (from != BytesFrom::unknown) {
        if (auto bytes = bytes_array(*entry)) {
          token.bytes = std::move(*bytes);
          from = BytesFrom::bytes_array;
        }
      }
      if (const json::value* id = field(*entry, "id")) token.id = token_id_of(*id);
      if (const auto logprob = logprob_of(*entry)) {
        token.has_logprob = true;
        token.logprob = *logprob;
      }
      const json::array* top = array_field(*entry, "top_logprobs");
      if (!top) top = array_field(*entry, "top_probs");
      if (!top) top = array_field(*entry, "probs");
      if (top) {
        token.top.reserve(top->size());
        for (const json::value& alternative_value : *top) {
          const json::object* alternative_object = alternative_value.if_object();
          if (!alternative_object) continue;
          Alternative& alternative = token.top.emplace_back();
          auto alt_text = string_field(*alternative_object, "token");
          if (!alt_text) alt_text = string_field(*alternative_object, "tok_str");
          if (alt_text) {
            if (const auto id = parse_token_id_string(*alt_text)) {
              alternative.id = *id;
            } else if (auto bytes = bytes_array(*alternative_object)) {
              alternative.bytes = std::move(*bytes);
            } else {
              alternative.bytes.assign(*alt_text);
            }
          }
          if (const json::value* id = field(*alternative_object, "id")) alternative.id = token_id_of(*id);
          alternative.logprob = logprob_of(*alternative_object).value_or(0);
          // The old llama.cpp format gives the sampled token's probability only among these.
          if (!token.has_logprob && from != BytesFrom::unknown && alternative.bytes == token.bytes) {
            token.has_logprob = true;
            token.logprob = alternative.logprob;
          }
        }
        sort_best_first(token.top);
      }
    }
  }

  // Legacy completions logprobs: parallel arrays.
  void read_legacy_logprobs(Choice& choice, const json::object& logprobs, std::int64_t offset_ns) {
    const json::array* tokens = array_field(logprobs, "tokens");
    if (!tokens) return;
    const json::array* token_logprobs = array_field(logprobs, "token_logprobs");
    const json::array* top_logprobs = array_field(logprobs, "top_logprobs");
    for (std::size_t i = 0; i < tokens->size(); ++i) {
      Token& token = add_token(choice, offset_ns, BytesFrom::unknown);
      if (const json::string* text = (*tokens)[i].if_string()) {
        bytes_from.back() = set_token_text(token, *text);
      }
      if (token_logprobs && i < token_logprobs->size()) {
        if (const auto logprob = number_of((*token_logprobs)[i])) {
          token.has_logprob = true;
          token.logprob = to_float(*logprob);
        }
      }
      if (top_logprobs && i < top_logprobs->size()) {
        if (const json::object* top = (*top_logprobs)[i].if_object()) {
          token.top.reserve(top->size());
          for (const auto& [key, value] : *top) {
            Alternative& alternative = token.top.emplace_back();
            if (const auto id = parse_token_id_string(key)) {
              alternative.id = *id;
            } else if (auto bytes = parse_bytes_label(key)) {
              alternative.bytes = std::move(*bytes);
            } else {
              alternative.bytes.assign(key);
            }
            alternative.logprob = to_float(number_of(value).value_or(0));
          }
          sort_best_first(token.top);
        }
      }
    }
  }

  // Ids from a plain array (vLLM return_token_ids, llama.cpp `tokens`) onto the tokens of this
  // event: fills ids of tokens already read from logprobs, or makes one token per id.
  void apply_id_array(Choice& choice, std::size_t first, const json::array& ids, std::int64_t offset_ns) {
    const std::size_t have = choice.tokens.size() - first;
    if (have == 0) {
      for (const json::value& id : ids) add_token(choice, offset_ns, BytesFrom::unknown).id = token_id_of(id);
      return;
    }
    if (have != ids.size()) {
      note(where() + ": choice " + std::to_string(choice.index) + ": " + std::to_string(ids.size()) +
           " token ids for " + std::to_string(have) + " logprob tokens; ids ignored");
      return;
    }
    for (std::size_t i = 0; i < have; ++i) {
      Token& token = choice.tokens[first + i];
      const std::int32_t id = token_id_of(ids[i]);
      if (token.id < 0) {
        token.id = id;
      } else if (id >= 0 && token.id != id) {
        note(where() + ": choice " + std::to_string(choice.index) + ": token id " + std::to_string(token.id) +
             " in logprobs but " + std::to_string(id) + " in token ids");
      }
    }
  }

  // One event's (or body's) worth of tokens for one choice: logprobs first, then id arrays,
  // then the text itself as one delta token.
  void read_tokens(Choice& choice, std::optional<std::string_view> text, const json::value* logprobs,
                   const json::array* ids, std::int64_t offset_ns) {
    const std::size_t first = choice.tokens.size();
    bytes_from.clear();
    const json::array* text_offsets = nullptr;
    if (logprobs) {
      if (const json::object* object = logprobs->if_object()) {
        if (const json::array* content = array_field(*object, "content")) {
          read_content_logprobs(choice, *content, offset_ns);
        } else if (array_field(*object, "tokens")) {
          read_legacy_logprobs(choice, *object, offset_ns);
          text_offsets = array_field(*object, "text_offset");
        } else if (!object->contains("content") && !object->contains("tokens") && !object->contains("refusal")) {
          note(where() + ": choice " + std::to_string(choice.index) + ": unknown logprobs shape");
        }
      }
    }
    if (ids) apply_id_array(choice, first, *ids, offset_ns);
    if (choice.tokens.size() == first) {
      if (text && !text->empty()) {
        add_token(choice, offset_ns, BytesFrom::token_text).bytes.assign(*text);
      }
      return;
    }
    settle_bytes(choice, first, text, text_offsets);
  }

  // ------------------------------------------------------------------------------------------
  // Dialects

  // Everything the model generated in a chat message or delta, in the order servers generate it:
  // reasoning, content, refusal, tool call names and arguments. Usually just `content`, returned
  // as a view; nullopt when there is none (a role-only delta).
  std::optional<std::string_view> chat_text(const json::object& message) {
    auto reasoning = string_field(message, "reasoning_content");
    if (!reasoning) reasoning = string_field(message, "reasoning");
    const auto content = string_field(message, "content");
    const auto refusal = string_field(message, "refusal");
    const json::array* tool_calls = array_field(message, "tool_calls");
    if (!reasoning && !refusal && (!tool_calls || tool_calls->empty())) return content;
    joined_text.clear();
    joined_text.append(reasoning.value_or(""));
    joined_text.append(content.value_or(""));
    joined_text.append(refusal.value_or(""));
    if (tool_calls) {
      for (const json::value& call : *tool_calls) {
        const json::object* call_object = call.if_object();
        const json::object* function = call_object ? object_field(*call_object, "function") : nullptr;
        if (!function) continue;
        joined_text.append(string_field(*function, "name").value_or(""));
        joined_text.append(string_field(*function, "arguments").value_or(""));
      }
    }
    return std::string_view(joined_text);
  }

  void read_openai(const json::object& root, std::int64_t offset_ns, bool streamed) {
    read_usage(root);
    const json::array* choice_array = array_field(root, "choices");
    if (!choice_array) {
      if (!field(root, "usage")) note(where() + ": no \"choices\" array");
      return;
    }
    for (const json::value& choice_value : *choice_array) {
      const json::object* choice_object = choice_value.if_object();
      if (!choice_object) continue;
      Choice* choice = choice_at(*choice_object);
      if (!choice) continue;

      std::optional<std::string_view> text = string_field(*choice_object, "text");
      const json::object* message = object_field(*choice_object, streamed ? "delta" : "message");
      if (!message) message = object_field(*choice_object, streamed ? "message" : "delta");
      if (message) text = chat_text(*message);
      read_tokens(*choice, text, field(*choice_object, "logprobs"), array_field(*choice_object, "token_ids"),
                  offset_ns);
      if (const auto reason = string_field(*choice_object, "finish_reason")) {
        choice->finish_reason.assign(*reason);
      }
    }
  }

  void read_llamacpp(const json::object& root, std::int64_t offset_ns) {
    if (!root.contains("content") && !root.contains("tokens") && !root.contains("completion_probabilities") &&
        !root.contains("stop")) {
      note(where() + ": not a llama.cpp completion object");
      return;
    }
    Choice* choice = choice_at(root);
    if (!choice) return;
    const std::size_t first = choice->tokens.size();
    bytes_from.clear();
    const auto content = string_field(root, "content");
    if (const json::array* probabilities = array_field(root, "completion_probabilities")) {
      read_content_logprobs(*choice, *probabilities, offset_ns);
    }
    if (const json::array* ids = array_field(root, "tokens"); ids && !ids->empty()) {
      apply_id_array(*choice, first, *ids, offset_ns);
    }
    if (choice->tokens.size() == first) {
      if (content && !content->empty()) add_token(*choice, offset_ns, BytesFrom::token_text).bytes.assign(*content);
    } else {
      settle_bytes(*choice, first, content, nullptr);
    }
    if (bool_field(root, "stop")) {
      finished = true;
      if (const auto stop_type = string_field(root, "stop_type")) {
        choice->finish_reason.assign(finish_reason_of_llamacpp(*stop_type));
      }
      const auto predicted = integer_field(root, "tokens_predicted");
      const auto evaluated = integer_field(root, "tokens_evaluated");
      if (predicted) usage.completion_tokens = *predicted;
      if (evaluated) usage.prompt_tokens = *evaluated;
      if (predicted && evaluated) usage.total_tokens = *predicted + *evaluated;
    }
  }

  Token& read_tgi_token(Choice& choice, const json::object& token_object, std::int64_t offset_ns) {
    Token& token = add_token(choice, offset_ns, BytesFrom::token_text);
    if (const json::value* id = field(token_object, "id")) token.id = token_id_of(*id);
    // TGI's generated_text leaves special tokens out (clients skip them by `special`); they stay
    // here as tokens with their id and logprob but no bytes, so the text matches generated_text.
    if (!bool_field(token_object, "special")) {
      if (const auto text = string_field(token_object, "text")) token.bytes.assign(*text);
    }
    if (const auto logprob = number_field(token_object, "logprob")) {
      token.has_logprob = true;
      token.logprob = to_float(*logprob);
    }
    return token;
  }

  void read_tgi_alternatives(Token& token, const json::array& top) {
    for (const json::value& value : top) {
      const json::object* object = value.if_object();
      if (!object) continue;
      Alternative& alternative = token.top.emplace_back();
      if (const json::value* id = field(*object, "id")) alternative.id = token_id_of(*id);
      if (const auto text = string_field(*object, "text")) alternative.bytes.assign(*text);
      alternative.logprob = logprob_of(*object).value_or(0);
    }
    sort_best_first(token.top);
  }

  void read_tgi_details(Choice& choice, const json::object& details) {
    if (const auto reason = string_field(details, "finish_reason")) {
      choice.finish_reason.assign(finish_reason_of_tgi(*reason));
    }
    const auto generated = integer_field(details, "generated_tokens");
    const auto input = integer_field(details, "input_length");
    if (generated) usage.completion_tokens = *generated;
    if (input) usage.prompt_tokens = *input;
    if (generated && input) usage.total_tokens = *generated + *input;
  }

  Choice& choice_with_index(std::uint32_t index) {
    for (Choice& existing : choices) {
      if (existing.index == index) return existing;
    }
    Choice& added = choices.emplace_back();
    added.index = index;
    return added;
  }

  void read_tgi_stream(const json::object& root, std::int64_t offset_ns) {
    // TGI streams one sequence; its "index" counts tokens, it does not name a choice.
    Choice* choice = &choice_with_index(0);
    if (const json::object* token_object = object_field(root, "token")) {
      Token& token = read_tgi_token(*choice, *token_object, offset_ns);
      if (const json::array* top = array_field(root, "top_tokens")) read_tgi_alternatives(token, *top);
    } else {
      note(where() + ": no \"token\" object");
    }
    if (const json::object* details = object_field(root, "details")) read_tgi_details(*choice, *details);
    const json::value* generated_text = field(root, "generated_text");
    if (generated_text && !generated_text->is_null()) finished = true;
  }

  void read_tgi_body(const json::object& root, std::uint32_t index, std::int64_t offset_ns) {
    Choice* choice = &choice_with_index(index);
    const auto generated_text = string_field(root, "generated_text");
    const json::object* details = object_field(root, "details");
    const json::array* tokens = details ? array_field(*details, "tokens") : nullptr;
    const json::array* top_tokens = details ? array_field(*details, "top_tokens") : nullptr;
    if (tokens) {
      for (std::size_t i = 0; i < tokens->size(); ++i) {
        const json::object* token_object = (*tokens)[i].if_object();
        if (!token_object) continue;
        Token& token = read_tgi_token(*choice, *token_object, offset_ns);
        if (top_tokens && i < top_tokens->size()) {
          if (const json::array* top = (*top_tokens)[i].if_array()) read_tgi_alternatives(token, *top);
        }
      }
    } else if (generated_text && !generated_text->empty()) {
      add_token(*choice, offset_ns, BytesFrom::token_text).bytes.assign(*generated_text);
    }
    if (details) read_tgi_details(*choice, *details);
  }

  // For Dialect::unknown: guess from the first JSON object's keys.
  void sniff(const json::object& root, bool streamed) {
    if (const json::array* choice_array = array_field(root, "choices")) {
      bool chat = false;
      for (const json::value& value : *choice_array) {
        if (const json::object* object = value.if_object()) {
          chat |= object->contains("delta") || object->contains("message");
        }
      }
      dialect = chat ? Dialect::openai_chat : Dialect::openai_completions;
    } else if (root.contains("token") || root.contains("generated_text")) {
      dialect = Dialect::tgi_generate;
    } else if (root.contains("content") && (root.contains("stop") || root.contains("tokens"))) {
      dialect = Dialect::llamacpp_completion;
    } else {
      return;
    }
    sniffed = true;
    note(std::string("dialect guessed from the ") + (streamed ? "stream" : "body") + ": " +
         std::string(to_string(dialect)));
  }

  void read(const json::value& value, std::int64_t offset_ns, bool streamed) {
    if (const json::array* array = value.if_array()) {
      // llama.cpp answers several prompts with an array of results; TGI's hub-style / too.
      if (dialect == Dialect::unknown && !array->empty() && array->front().is_object()) {
        sniff(array->front().get_object(), streamed);
      }
      std::uint32_t index = 0;
      for (const json::value& element : *array) {
        if (const json::object* object = element.if_object()) {
          if (dialect == Dialect::tgi_generate) {
            read_tgi_body(*object, index, offset_ns);
          } else {
            read_object(*object, offset_ns, streamed);
          }
        }
        ++index;
      }
      return;
    }
    const json::object* root = value.if_object();
    if (!root) {
      note(where() + ": JSON is not an object");
      return;
    }
    read_object(*root, offset_ns, streamed);
  }

  void read_object(const json::object& root, std::int64_t offset_ns, bool streamed) {
    if (dialect == Dialect::unknown) sniff(root, streamed);
    if (read_error(root)) return;
    switch (dialect) {
      case Dialect::openai_completions:
      case Dialect::openai_chat: read_openai(root, offset_ns, streamed); break;
      case Dialect::llamacpp_completion: read_llamacpp(root, offset_ns); break;
      case Dialect::tgi_generate:
        if (streamed) {
          read_tgi_stream(root, offset_ns);
        } else {
          read_tgi_body(root, 0, offset_ns);
        }
        break;
      case Dialect::unknown:
        if (notes.empty()) note(where() + ": unknown response shape; kept raw");
        break;
    }
  }
};

ResponseDecoder::ResponseDecoder(Dialect dialect) : impl_(std::make_unique<Impl>(dialect, true)) {}
ResponseDecoder::ResponseDecoder(Dialect dialect, bool fast_path)
    : impl_(std::make_unique<Impl>(dialect, fast_path)) {}
ResponseDecoder::~ResponseDecoder() = default;
ResponseDecoder::ResponseDecoder(ResponseDecoder&&) noexcept = default;
ResponseDecoder& ResponseDecoder::operator=(ResponseDecoder&&) noexcept = default;

void ResponseDecoder::on_event(std::string_view data, std::int64_t offset_ns) {
  Impl& impl = *impl_;
  ++impl.events_seen;
  // Keep-alive comments and empty events carry nothing.
  const auto start = data.find_first_not_of(" \t\r\n");
  if (start == std::string_view::npos) return;
  data.remove_prefix(start);
  if (data.substr(0, 6) == "[DONE]") {
    impl.finished = true;
    return;
  }
  if (impl.finished) {
    // llama.cpp's "stop": true and TGI's last event end the stream; anything after is extra.
    if (impl.events_after_end++ == 0) impl.note(impl.where() + ": data after the end of the stream");
  }
  if (impl.read_simple_event(data, offset_ns)) return;
  const auto value = impl.parse(data, impl.where());
  if (!value) return;
  impl.read(*value, offset_ns, true);
}

void ResponseDecoder::on_body(std::string_view body, std::int64_t offset_ns) {
  Impl& impl = *impl_;
  impl.events_seen = 1;
  const auto value = impl.parse(body, "body");
  impl.finished = true;
  if (!value) return;
  // Messages about "event 0" read better as "body" here.
  const std::size_t notes_before = impl.notes.size();
  impl.read(*value, offset_ns, false);
  for (std::size_t i = notes_before; i < impl.notes.size(); ++i) {
    if (impl.notes[i].rfind("event 0", 0) == 0) impl.notes[i].replace(0, 7, "body");
  }
}

bool ResponseDecoder::finished() const { return impl_->finished; }

void ResponseDecoder::finish(Exchange& out) {
  Impl& impl = *impl_;
  std::sort(impl.choices.begin(), impl.choices.end(),
            [](const Choice& a, const Choice& b) { return a.index < b.index; });
  for (Choice& choice : impl.choices) {
    std::size_t with_id = 0;
    std::size_t with_logprob = 0;
    for (const Token& token : choice.tokens) {
      with_id += token.id >= 0;
      with_logprob += token.has_logprob;
    }
    const std::size_t count = choice.tokens.size();
    if (count == 0) {
      choice.kind = TokenKind::none;
    } else if (with_id == count) {
      choice.kind = TokenKind::token_ids;
    } else if (with_logprob == count) {
      choice.kind = TokenKind::logprob_tokens;
    } else {
      choice.kind = TokenKind::text_deltas;
      if (with_id > 0 || with_logprob > 0) {
        impl.note("choice " + std::to_string(choice.index) + ": only " +
                  std::to_string(std::max(with_id, with_logprob)) + " of " + std::to_string(count) +
                  " tokens carry ids or logprobs; compared as text");
      }
    }
  }
  if (!impl.finished && impl.events_seen > 0) {
    impl.note("stream ended before its end marker after " + std::to_string(impl.events_seen) + " events");
  }
  out.choices = std::move(impl.choices);
  impl.choices.clear();
  out.usage = impl.usage;
  out.dialect = std::string(to_string(impl.dialect));
  std::string note;
  for (const std::string& part : impl.notes) {
    if (!note.empty()) note += "; ";
    note += part;
  }
  if (impl.notes_dropped > 0) note += "; and " + std::to_string(impl.notes_dropped) + " more";
  out.decode_note = std::move(note);
}

std::string choice_text(const Choice& choice) {
  std::size_t size = 0;
  for (const Token& token : choice.tokens) size += token.bytes.size();
  std::string text;
  text.reserve(size);
  for (const Token& token : choice.tokens) text += token.bytes;
  return text;
}

namespace {

bool looks_like_sse(std::string_view body) {
  if (body.substr(0, 3) == "\xEF\xBB\xBF") body.remove_prefix(3);
  const auto start = body.find_first_not_of("\r\n");
  if (start == std::string_view::npos) return false;
  body.remove_prefix(start);
  return body.substr(0, 5) == "data:" || body.substr(0, 6) == "event:" || body.substr(0, 1) == ":";
}

}  // namespace

void decode_exchange(Exchange& exchange) {
  exchange.choices.clear();
  exchange.usage = Usage{};
  exchange.decode_note.clear();
  const Dialect dialect = detect_dialect(exchange.request.target, exchange.request.body);
  exchange.dialect = std::string(to_string(dialect));
  const Response& response = exchange.response;
  if (response.status == 0) {
    exchange.decode_note = "no response to decode";
    return;
  }
  if (response.status >= 400) {
    std::string body = response.body;
    if (body.empty()) {
      for (const Event& event : response.events) body += event.data;
    }
    exchange.decode_note = "HTTP " + std::to_string(response.status) + ": no tokens";
    if (!body.empty()) {
      std::string excerpt = body.substr(0, 200);
      for (char& c : excerpt) {
        if (static_cast<unsigned char>(c) < 0x20) c = ' ';
      }
      exchange.decode_note += " (" + excerpt + ")";
    }
    return;
  }

  ResponseDecoder decoder(dialect);
  std::string partial;
  std::size_t events = 0;
  auto decode_sse = [&](auto&& for_each_chunk) {
    SseParser parser;
    for_each_chunk([&](std::string_view bytes, std::int64_t offset_ns) {
      parser.feed(bytes, [&](const SseEvent& event) {
        ++events;
        decoder.on_event(event.data, offset_ns);
      });
    });
    partial = parser.take_partial();
  };
  const std::int64_t body_offset = exchange.end_ns >= 0 ? exchange.end_ns : std::max<std::int64_t>(exchange.first_byte_ns, 0);
  if (response.streamed) {
    decode_sse([&](auto&& feed) {
      for (const Event& event : response.events) feed(event.data, event.offset_ns);
      if (!response.body.empty()) feed(response.body, body_offset);
    });
  } else if (looks_like_sse(response.body)) {
    decode_sse([&](auto&& feed) { feed(response.body, body_offset); });
  } else {
    decoder.on_body(response.body, body_offset);
  }
  if (events == 0 && !partial.empty() && !looks_like_sse(partial)) {
    // Marked streamed but not SSE framed (a JSON body sent in chunks): decode it as a body.
    decoder.on_body(partial, body_offset);
    partial.clear();
  }
  decoder.finish(exchange);
  if (!partial.empty()) {
    std::string note = "stream cut: " + std::to_string(partial.size()) + " bytes of an unterminated event dropped";
    exchange.decode_note = exchange.decode_note.empty() ? note : note + "; " + exchange.decode_note;
  }
}

}  // namespace retrace::llm
