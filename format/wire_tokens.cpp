// A choice's stored tokens and their alternatives -> Cap'n Proto (trace.capnp's Token and
// Alternative), written as words in one pass instead of through a setter a field: the writer's
// largest cost after zstd on a streamed answer with logprobs (issue 44). The words are exactly
// those the generated setters make, in their order (tests/format_wire_tokens_test.cpp compares
// the two at production size and at the edges), so a trace is byte for byte what it was:
//
//   tokens list: its tag, then a Token a 5 words: data {id ^ -1 : u32, hasLogprob : bit 32},
//   {logprob : f32}, {offsetNs : i64}; pointers {bytes}, {top}
//   then, token after token: its bytes (a Data blob, padded to words; an empty one takes no word
//   and points where the next thing goes, as Cap'n Proto's allocation does), and when it has
//   alternatives its top list (a tag, an Alternative a 2 words: data {id ^ -1 : u32,
//   logprob : f32}, pointer {bytes}) followed by each alternative's bytes.
//
// Pointers (capnp encoding spec): a list pointer is u32 (offset in words from the pointer's end)
// << 2 | 1, then u32 count << 3 | element size (2 bytes, 7 inline composite: count in words); an
// inline composite list's tag is a struct pointer whose offset is its element count.
#include <bit>

#include "format/wire.hpp"

namespace retrace::detail {

namespace {

capnp::Data::Reader blob(std::string_view s) {
  return capnp::Data::Reader(reinterpret_cast<const kj::byte*>(s.data()), s.size());
}

// The layout above is the schema's (a field added to Token or Alternative fails here first).
static_assert(wire::Token::_capnpPrivate::dataWordSize == 3 && wire::Token::_capnpPrivate::pointerCount == 2);
static_assert(wire::Alternative::_capnpPrivate::dataWordSize == 1 &&
              wire::Alternative::_capnpPrivate::pointerCount == 1);

std::uint64_t words_of(std::size_t bytes) { return (bytes + 7) / 8; }

void put(capnp::word* at, std::uint64_t value) { std::memcpy(static_cast<void*>(at), &value, sizeof value); }

std::uint64_t bits_of(float value) { return std::bit_cast<std::uint32_t>(value); }
std::uint64_t id_bits(std::int32_t id) { return static_cast<std::uint32_t>(id) ^ 0xFFFFFFFFu; }  // default -1

// A list pointer at `at` to `target`: `count` elements of `element_size`.
std::uint64_t list_pointer(const capnp::word* at, const capnp::word* target, std::uint64_t element_size,
                           std::uint64_t count) {
  const auto offset = static_cast<std::uint32_t>(target - at - 1);
  return static_cast<std::uint32_t>(offset << 2 | 1u) | (count << 3 | element_size) << 32;
}

// `bytes` as a Data blob at `*next`, its pointer at `at`; `*next` moves past its words.
inline void put_blob(capnp::word* at, capnp::word*& next, const std::string& bytes) {
  const std::size_t size = bytes.size();
  put(at, list_pointer(at, next, 2, size));
  if (size - 1 < 8) {
    // Most tokens: one word, put together from loads inside the bytes (two overlapping 4-byte
    // ones from 4 bytes up, else the first, middle and last byte), its padding zero, instead of a
    // call to memcpy.
    const char* in = bytes.data();
    std::uint64_t word;
    if (size >= 4) {
      std::uint32_t low, high;
      std::memcpy(&low, in, 4);
      std::memcpy(&high, in + size - 4, 4);
      word = low | std::uint64_t{high} << 8 * (size - 4);
    } else {
      auto byte = [&](std::size_t at) { return std::uint64_t{static_cast<unsigned char>(in[at])} << 8 * at; };
      word = byte(0) | byte(size / 2) | byte(size - 1);
    }
    put(next, word);
    next += 1;
  } else {
    if (size != 0) std::memcpy(static_cast<void*>(next), bytes.data(), size);  // its padding is zero already
    next += words_of(size);
  }
}

}  // namespace

void fill_tokens_by_setters(capnp::List<wire::Token>::Builder tokens, const Choice& choice) {
  for (unsigned t = 0; t < choice.tokens.size(); ++t) {
    const Token& token = choice.tokens[t];
    auto token_out = tokens[t];
    token_out.setId(token.id);
    token_out.setBytes(blob(token.bytes));
    token_out.setHasLogprob(token.has_logprob);
    token_out.setLogprob(token.logprob);
    token_out.setOffsetNs(token.offset_ns);
    if (const auto alternatives = choice.top(token); !alternatives.empty()) {
      auto top = token_out.initTop(alternatives.size());
      for (unsigned a = 0; a < alternatives.size(); ++a) {
        auto alternative = top[a];
        alternative.setId(alternatives[a].id);
        alternative.setBytes(blob(alternatives[a].bytes));
        alternative.setLogprob(alternatives[a].logprob);
      }
    }
  }
}

void fill_tokens(wire::Choice::Builder out, const Choice& choice) {
  auto tokens = out.initTokens(static_cast<unsigned>(choice.tokens.size()));
  if (choice.tokens.empty()) return;
  // The words after the list: every token's bytes, top list and alternatives' bytes.
  std::uint64_t after = 0;
  for (const Token& token : choice.tokens) {
    after += words_of(token.bytes.size());
    if (const auto top = choice.top(token); !top.empty()) {
      after += 1 + 2 * top.size();
      for (const Alternative& alternative : top) after += words_of(alternative.bytes.size());
    }
  }
  capnp::word* const list = reinterpret_cast<capnp::word*>(capnp::AnyStruct::Builder(tokens[0]).getDataSection().begin());
  capnp::word* next = list + 5 * choice.tokens.size();
  // Allocated by Cap'n Proto as token 0's bytes would be (what it allocates first after the list),
  // zeroed; its pointer is written again below. Past one blob's most, or elsewhere than right
  // after the list (another segment), the setters write them instead.
  if (std::endian::native != std::endian::little || after * 8 > kMaxBlobBytes ||
      (after > 0 && reinterpret_cast<capnp::word*>(tokens[0].initBytes(static_cast<unsigned>(after * 8)).begin()) != next)) {
    fill_tokens_by_setters(tokens, choice);
    return;
  }
  capnp::word* element = list;
  for (const Token& token : choice.tokens) {
    put(element, id_bits(token.id) | static_cast<std::uint64_t>(token.has_logprob) << 32);
    put(element + 1, bits_of(token.logprob));
    put(element + 2, static_cast<std::uint64_t>(token.offset_ns));
    put_blob(element + 3, next, token.bytes);
    if (const auto top = choice.top(token); !top.empty()) {
      put(element + 4, list_pointer(element + 4, next, 7, 2 * top.size()));
      put(next, static_cast<std::uint64_t>(top.size()) << 2 | (std::uint64_t{1} | std::uint64_t{1} << 16) << 32);
      capnp::word* alternative_out = next + 1;
      next += 1 + 2 * top.size();
      for (const Alternative& alternative : top) {
        put(alternative_out, id_bits(alternative.id) | bits_of(alternative.logprob) << 32);
        put_blob(alternative_out + 1, next, alternative.bytes);
        alternative_out += 2;
      }
    } else {
      put(element + 4, 0);
    }
    element += 5;
  }
}

}  // namespace retrace::detail
