// Text rules every module shares, so that each is written once: what UTF-8 is, and how bytes are
// shown on one line of a terminal, a report or an error message.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace retrace {

// Strict UTF-8 (RFC 3629): overlong forms, surrogates (U+D800..U+DFFF) and values past U+10FFFF
// are not UTF-8.
bool is_valid_utf8(std::string_view bytes);

// `bytes` as they are when they are UTF-8, else with each byte that starts no valid character
// replaced by U+FFFD: for text meant to be read (notes, messages) in a format that must be UTF-8.
std::string utf8_or_replaced(std::string_view bytes);

// The length of `text` without a UTF-8 sequence cut short at its end (at most 3 bytes go), so a
// stream of text never hands out half a character. Only the last character is looked at.
std::size_t utf8_whole_prefix(std::string_view text);

// JSON text with every lone UTF-16 surrogate escape ("\ud83d" with no low half after it, or a low
// half alone: valid JSON, common in scraped chat dumps, and no character at all) rewritten in
// place as "\ufffd", U+FFFD REPLACEMENT CHARACTER, so that a JSON parser takes it. Pairs and
// every other byte are left alone. Returns the number replaced.
std::size_t replace_lone_surrogate_escapes(std::string& json);

// The length of the strict UTF-8 character that starts at `bytes[at]` (1 to 4), or 0 when the
// bytes there are not one (is_valid_utf8's rules, one character).
std::size_t utf8_char_length(std::string_view bytes, std::size_t at);

// How many code points `text` holds: the columns it takes on a terminal, near enough for aligning
// mostly Latin text.
std::size_t utf8_width(std::string_view text);

// `bytes` on one line: \n, \t, \r and \\ escaped, other control bytes and bytes that are not
// UTF-8 as \xNN, whole UTF-8 characters as they are. At most `max_bytes` of `bytes` are shown,
// never half a character, and a cut ends in "…".
std::string printable(std::string_view bytes, std::size_t max_bytes = std::string_view::npos);

}  // namespace retrace
