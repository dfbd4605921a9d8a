// The fast path (see fast_event.hpp): an event parsed by simdjson, its document walked into the
// handler of simple_event_handler.hpp, and the decoder's use of what it read.
#include "llm/fast_event.hpp"

#include <simdjson.h>

#include <cstring>

#include "llm/decoder_impl.hpp"
#include "llm/simple_event_handler.hpp"

static_assert(retrace::llm::kJsonPadding >= simdjson::SIMDJSON_PADDING);

namespace retrace::llm {

namespace {

namespace dom = simdjson::dom;

// Deeper than any event the fast path reads (~9 levels); Boost.JSON's limit is 64.
constexpr int kMaxWalkDepth = 32;

// Every value of a parsed document told to the handler in order, what it does not read included
// (simdjson has already checked all of it: structure, literals, numbers, escapes, UTF-8).
bool walk(dom::element element, SimpleEventHandler& handler, int depth, json::error_code& ec) {
  if (depth > kMaxWalkDepth) return false;
  switch (element.type()) {
    case dom::element_type::OBJECT: {
      if (!handler.on_object_begin(ec)) return false;
      for (const dom::key_value_pair field : dom::object(element)) {
        if (!handler.on_key(field.key, ec) || !walk(field.value, handler, depth + 1, ec)) return false;
      }
      return handler.on_object_end(ec);
    }
    case dom::element_type::ARRAY: {
      if (!handler.on_array_begin(ec)) return false;
      for (const dom::element item : dom::array(element)) {
        if (!walk(item, handler, depth + 1, ec)) return false;
      }
      return handler.on_array_end(ec);
    }
    case dom::element_type::STRING: return handler.on_string(std::string_view(element), ec);
    // simdjson reads an integer's spelling as an integer or refuses it (past 2^64, below -2^63:
    // left to Boost.JSON), and only a fraction or an exponent as a double, as Boost.JSON does.
    case dom::element_type::INT64: return handler.on_int64(std::int64_t(element), ec);
    case dom::element_type::UINT64: {
      const auto value = std::uint64_t(element);
      // Boost.JSON says uint64 only past INT64_MAX; simdjson may say it of any positive value.
      if (value <= std::uint64_t(INT64_MAX)) return handler.on_int64(std::int64_t(value), ec);
      return handler.on_uint64(value, ec);
    }
    case dom::element_type::DOUBLE: return handler.on_double(double(element), ec);
    case dom::element_type::BOOL: return handler.on_bool(bool(element), ec);
    case dom::element_type::NULL_VALUE: return handler.on_null(ec);
  }
  return false;
}

// An event copied where simdjson may read kJsonPadding bytes past its end: one buffer per thread,
// grown to the largest event and reused.
const char* padded_copy(std::string_view data) {
  static thread_local std::unique_ptr<char[]> buffer;
  static thread_local std::size_t capacity = 0;
  if (data.size() + kJsonPadding > capacity) {
    capacity = std::max(data.size() + kJsonPadding, 2 * capacity);
    buffer.reset(new char[capacity]());  // the padding is read, so it is initialised once
  }
  if (!data.empty()) std::memcpy(buffer.get(), data.data(), data.size());
  return buffer.get();
}

}  // namespace

struct FastEventParser::Parser {
  SimpleEventHandler handler;
};

FastEventParser::FastEventParser() : parser_(std::make_unique<Parser>()) {}
FastEventParser::~FastEventParser() = default;

std::optional<std::span<const SimpleChoice>> FastEventParser::parse(std::string_view data, std::size_t readable_after) {
  SimpleEventHandler& simple = parser_->handler;
  simple.reset();
  const char* padded = readable_after >= kJsonPadding ? data.data() : padded_copy(data);
  // One parser per thread (its buffers grow to the largest event and are reused): a parse and
  // its walk end before the next parse begins.
  static thread_local dom::parser parser;
  dom::element root;
  if (parser.parse(padded, data.size(), false).get(root) || root.type() != dom::element_type::OBJECT) return std::nullopt;
  json::error_code ec;
  if (!walk(root, simple, 1, ec) || !simple.saw_choices_array()) return std::nullopt;
  return simple.choices();
}

const SimpleUsage& FastEventParser::usage() const { return parser_->handler.usage(); }

bool ResponseDecoder::Impl::read_simple_event(std::string_view data, std::int64_t offset_ns, bool streamed,
                                              std::size_t readable_after) {
  if (!fast_path || (dialect != Dialect::openai_completions && dialect != Dialect::openai_chat)) return false;
  const auto parsed_choices = fast_parser.parse(data, readable_after);
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
