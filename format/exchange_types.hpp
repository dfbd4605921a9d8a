// retrace trace format: the types of an exchange's output (enums, tokens, alternatives, choices)
// and of its streamed response's events, split from format/trace.hpp (which includes this file:
// include that one).
//
// Output parts (format 1.4). An exchange's output is a list of token streams, `Exchange::choices`,
// one per part of each output choice, so that a reasoning model's thinking, its answer and its
// tool calls are compared, counted and timed each on its own (two answers whose visible text
// differs only where a joined string hid it differ; a tool call f({"a":1}) is not the text
// f{"a":1}):
//   Choice{index, part}           index: the server's choice (OpenAI `n`), 0 for one-output APIs
//     part content    the answer; present in every generated choice, even empty, and the one
//                     readers that want "the output" read (choice_text of part content)
//     part reasoning  reasoning_content / reasoning (vLLM, SGLang, DeepSeek), Responses reasoning
//                     text, Anthropic thinking
//     part refusal    OpenAI's refusal text
//     part tool_call  one call: `tool_name`, and its arguments as streamed in `tokens`;
//                     `tool_call` is its position among the choice's calls (the server's index
//                     in a stream), so calls pair by position; the call's id is not compared
//     part embedding  `values`, no tokens; one per input (`index`)
// Order: by index, then by part_rank() (the order a model generates them: reasoning, content,
// refusal, tool calls by position; embeddings alone), one Choice per (index, part, tool_call).
// Every part of a choice carries the choice's finish_reason. Usage::completion_tokens counts
// every part's tokens (as servers do); Usage::reasoning_tokens the reasoning part's, where the
// server says. Traces written before 1.4 read as part content only, with the other parts joined
// into it as they were decoded then, and compare with each other as they always did.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/enum_names.hpp"

namespace retrace {

// Their names are the enumerators' own (base/enum_names.hpp); the values are the schema's.
enum class Source : std::uint8_t { recorded, replayed, imported };
BOOST_DESCRIBE_ENUM(Source, recorded, replayed, imported)
enum class TokenKind : std::uint8_t { none, text_deltas, logprob_tokens, token_ids };
BOOST_DESCRIBE_ENUM(TokenKind, none, text_deltas, logprob_tokens, token_ids)
// Which part of an output a Choice is (see the top of this file). The values are the schema's.
enum class Part : std::uint8_t { content, reasoning, refusal, tool_call, embedding };
BOOST_DESCRIBE_ENUM(Part, content, reasoning, refusal, tool_call, embedding)
// Position of a part in the order a model generates them (Choice order within an index).
constexpr int part_rank(Part part) {  // reasoning, content, refusal, tool_call, embedding
  constexpr int kRank[] = {1, 0, 2, 3, 4};  // by Part's value
  auto at = static_cast<std::size_t>(part);
  return at < std::size(kRank) ? kRank[at] : 5;
}
// `rejected`: the request never went upstream; record answered it itself (400, 413, 431).
// `server_error`: a 2xx response whose body or stream says the server failed ({"error": ...},
// {"object": "error"}), as vLLM and SGLang report a failure after the 200 header.
// `truncated`: a 2xx stream that ended cleanly (the HTTP body complete) without its end marker
// ([DONE], a last event) and with a choice lacking a finish reason: the engine behind a proxy died.
// Both are set by llm::ResponseDecoder::finish, so record and replay classify alike.
enum class ErrorKind : std::uint8_t {
  none, connect, tls, timeout, reset, http_status, protocol, cut, rejected, server_error, truncated
};
BOOST_DESCRIBE_ENUM(ErrorKind, none, connect, tls, timeout, reset, http_status, protocol, cut,
                    rejected, server_error, truncated)
// Size of an array indexed by ErrorKind.
inline constexpr std::size_t kErrorKindCount = enum_count<ErrorKind>;

std::string_view to_string(Source);
std::string_view to_string(TokenKind);
std::string_view to_string(ErrorKind);
std::string_view to_string(Part);
// Parse the names above ("text_deltas", "http_status", ...); nullopt when unknown.
std::optional<TokenKind> token_kind_from_string(std::string_view);
std::optional<ErrorKind> error_kind_from_string(std::string_view);
std::optional<Source> source_from_string(std::string_view);
std::optional<Part> part_from_string(std::string_view);

struct Alternative {
  std::int32_t id = -1;  // -1: the server gave no id
  std::string bytes;
  float logprob = 0;
  bool operator==(const Alternative&) const = default;
};

struct Token {
  std::int32_t id = -1;  // -1: the server gave no id
  std::string bytes;     // the token's bytes (may be a partial UTF-8 sequence)
  bool has_logprob = false;
  float logprob = 0;
  std::int64_t offset_ns = 0;  // arrival of the event that carried it, from the request's send
  // Its alternatives, best first: Choice::alternatives[top_begin, top_begin + top_count), read
  // through its choice's top(token). Positions, not a pointer: a copied or moved Choice keeps them.
  // A token without alternatives may have any top_begin (the decoder, the readers and add_token
  // leave it at the vector's size when the token was added): equality does not read it then.
  std::uint32_t top_begin = 0, top_count = 0;
  bool operator==(const Token& other) const {
    return id == other.id && bytes == other.bytes && has_logprob == other.has_logprob &&
           logprob == other.logprob && offset_ns == other.offset_ns && top_count == other.top_count &&
           (top_count == 0 || top_begin == other.top_begin);
  }
};

struct Choice {
  std::uint32_t index = 0;
  TokenKind kind = TokenKind::none;
  std::vector<Token> tokens;
  std::string finish_reason;
  Part part = Part::content;
  std::uint32_t tool_call = 0;  // part tool_call: position among the choice's calls
  std::string tool_name;        // part tool_call
  std::vector<double> values;   // part embedding
  // Every token's alternatives, token after token: one vector a choice (its storage reused when
  // the choice is), not one a token, which cost a malloc and a free each (issue 44).
  std::vector<Alternative> alternatives;
  bool operator==(const Choice&) const = default;

  // The alternatives of `token`, one of this choice's tokens.
  std::span<const Alternative> top(const Token& token) const {
    return {alternatives.data() + token.top_begin, token.top_count};
  }
  std::span<Alternative> top(const Token& token) {
    return {alternatives.data() + token.top_begin, token.top_count};
  }
  // Appends an alternative to `token`'s, which are the last ones (it is the token being built).
  Alternative& add_alternative(Token& token) {
    if (token.top_count == 0) token.top_begin = static_cast<std::uint32_t>(alternatives.size());
    ++token.top_count;
    return alternatives.emplace_back();
  }
  // Appends a copy of `token` (of another choice, or being built) with `top` as its alternatives.
  Token& add_token(const Token& token, std::span<const Alternative> top) {
    Token& added = tokens.emplace_back(token);
    added.top_begin = static_cast<std::uint32_t>(alternatives.size());
    added.top_count = static_cast<std::uint32_t>(top.size());
    alternatives.insert(alternatives.end(), top.begin(), top.end());
    return added;
  }
};
// The answer of the first choice (its content part), or nullptr: what everything that reads "the
// output" reads (--expect, live sessions, per-request rows, cat's text). For Choice and ChoiceOutput.
template <class ChoiceLike>
const ChoiceLike* first_answer(const std::vector<ChoiceLike>& choices) {
  for (const ChoiceLike& choice : choices) {
    if (choice.index != choices.front().index) break;
    if (choice.part == Part::content) return &choice;
  }
  return nullptr;
}
// The order of Exchange::choices (top of this file): index, then part_rank, then tool_call.
inline bool choice_order(const Choice& a, const Choice& b) {
  if (a.index != b.index) return a.index < b.index;
  if (a.part != b.part) return part_rank(a.part) < part_rank(b.part);
  return a.tool_call < b.tool_call;
}

// One event of a streamed response as read from its Events: its arrival and a view of its bytes
// in the response's buffer, valid until those events next change.
struct Event {
  std::int64_t offset_ns = 0;  // arrival, from the request's send
  std::string_view data;       // raw bytes; all events concatenated are the decoded body byte for byte
  bool operator==(const Event& other) const { return offset_ns == other.offset_ns && data == other.data; }
};

// A streamed response's events: their bytes concatenated in one buffer (the decoded body byte for
// byte), each event its arrival and where its bytes end in it. Positions, not pointers: copies and
// moves stay valid. One allocation for all the bytes instead of a string an event (issue 44); a
// cleared Events keeps its capacity, so a reader that reuses it allocates only while records grow.
// Read like a vector of Event (values: views into the buffer); append with push_back.
class Events {
 public:
  Events() = default;
  Events(std::initializer_list<Event> events) {
    for (const Event& event : events) push_back(event);
  }

  class const_iterator {
   public:
    using value_type = Event;
    using difference_type = std::ptrdiff_t;
    const_iterator() = default;
    const_iterator(const Events* events, std::size_t at) : events_(events), at_(at) {}
    Event operator*() const { return (*events_)[at_]; }
    const_iterator& operator++() { return ++at_, *this; }
    const_iterator operator++(int) { return {events_, at_++}; }
    bool operator==(const const_iterator& other) const { return at_ == other.at_; }

   private:
    const Events* events_ = nullptr;
    std::size_t at_ = 0;
  };

  std::size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  Event operator[](std::size_t at) const {
    const std::size_t begin = at == 0 ? 0 : entries_[at - 1].end;
    return {entries_[at].offset_ns, std::string_view(bytes_).substr(begin, entries_[at].end - begin)};
  }
  Event front() const { return (*this)[0]; }
  Event back() const { return (*this)[size() - 1]; }
  const_iterator begin() const { return {this, 0}; }
  const_iterator end() const { return {this, size()}; }
  // Every event's bytes, in order: the decoded body.
  std::string_view bytes() const { return bytes_; }

  void push_back(const Event& event) { push_back(event.offset_ns, event.data); }
  void push_back(std::int64_t offset_ns, std::string_view data) {
    bytes_.append(data);
    entries_.push_back({offset_ns, bytes_.size()});
  }
  // Events framed in a buffer held elsewhere, which they then take over instead of copying it
  // (net/arrived_body.cpp frames a body where it arrived): push_position() for each event in
  // order, then adopt() the bytes; until then the positions have no bytes (only size() and
  // memory() may be asked).
  void push_position(std::int64_t offset_ns, std::size_t length) {
    entries_.push_back({offset_ns, (entries_.empty() ? 0 : entries_.back().end) + length});
  }
  // Takes `bytes` (moved from) as the events' bytes when they are exactly what the positions
  // cover and the Events holds no bytes yet; false, `bytes` untouched, otherwise.
  bool adopt(std::string& bytes) {
    if (!bytes_.empty() || bytes.size() != (entries_.empty() ? 0 : entries_.back().end)) return false;
    bytes_ = std::move(bytes);
    return true;
  }
  // Room for `events` events of `bytes` bytes in all, so that appending them allocates nothing.
  void reserve(std::size_t events, std::size_t bytes = 0) {
    entries_.reserve(events);
    bytes_.reserve(bytes);
  }
  // Keeps the first `count` events (no more than there are).
  void truncate(std::size_t count) {
    if (count >= size()) return;
    entries_.resize(count);
    bytes_.resize(count == 0 ? 0 : entries_.back().end);
  }
  void clear() {  // keeps the capacity
    entries_.clear();
    bytes_.clear();
  }
  // Empties and frees the storage.
  void release() {
    std::vector<Entry>().swap(entries_);
    std::string().swap(bytes_);
  }
  void swap(Events& other) noexcept {
    entries_.swap(other.entries_);
    bytes_.swap(other.bytes_);
  }
  // What the storage takes, and could take after growing to hold `more_events` events and
  // `more_bytes` bytes more (a vector or string at least doubles when it grows).
  std::size_t memory() const { return entries_.capacity() * sizeof(Entry) + bytes_.capacity(); }
  std::size_t memory_after(std::size_t more_events, std::size_t more_bytes) const {
    return grown(entries_.size() + more_events, entries_.capacity()) * sizeof(Entry) +
           grown(bytes_.size() + more_bytes, bytes_.capacity());
  }
  bool operator==(const Events&) const = default;

 private:
  struct Entry {
    std::int64_t offset_ns;
    std::uint64_t end;  // where its bytes end in bytes_; they begin where the previous event's end
    bool operator==(const Entry&) const = default;
  };
  static std::size_t grown(std::size_t need, std::size_t capacity) {
    return need > capacity ? 2 * std::max(need, capacity) : capacity;
  }
  std::vector<Entry> entries_;
  std::string bytes_;
};
}  // namespace retrace
