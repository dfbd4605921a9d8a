// Internal to llm/: a one-pass JSON scanner in front of Boost.JSON's SAX parser, for the events a
// stream repeats. It walks one whole event (a complete buffer, so none of basic_parser's
// suspend/resume bookkeeping) and calls the same handler with the same events, in the same order
// and with the same values, that basic_parser<Handler>::write_some(false, ...) would, under the
// decoder's parse_options (allow_invalid_utf8 on, no comments, no trailing commas). It models only
// what an event of a well-formed stream holds; at anything else (a syntax error, a lone surrogate,
// a number whose conversion it does not reproduce digit for digit, nesting near the limit, a
// handler that declines) it stops with `false`, and the caller runs basic_parser on the same
// bytes from a reset handler, so the result is the parser's by construction. A test and a fuzz
// target (fuzz_fast_scan) compare the two event by event.
//
// Numbers: the same integer/uint64/double choice and the same double as basic_parser
// (detail::dec_to_float of the same mantissa and exponent, including its two ways of gathering
// fraction digits: all of them when 33 bytes or more follow the sign, else while the mantissa is
// at most 2^53 - 1). Integer parts of more than 15 digits and exponents of more than 4 digits are
// left to the parser.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include <boost/json/basic_parser_impl.hpp>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

namespace retrace::llm {

// True when the scanner reproduces basic_parser under `options`.
inline bool scanner_models(const boost::json::parse_options& options) {
  return options.allow_invalid_utf8 && !options.allow_comments && !options.allow_trailing_commas &&
         options.max_depth >= 2;
}

// A number as basic_parser reports it: an int64 (on_int64) or a double (on_double).
struct JsonNumber {
  bool is_double = false;
  std::int64_t integer = 0;
  double real = 0;
  std::string_view text;
};

// The scanner's reading of JSON's tokens from a complete buffer, shared by JsonScanner and
// ShapeReader (fast_scan_shape.hpp).
class JsonLexer {
 public:
  // `buffer` holds an escaped string's unescaped bytes (kept by the caller to stay warm).
  explicit JsonLexer(std::string& buffer) : buffer_(buffer) {}

 protected:
  void start(std::string_view data) {
    p_ = data.data();
    end_ = p_ + data.size();
  }
  void skip_space() {
    while (p_ != end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
  }

  bool literal(const char (&word)[5]) { return match(word, 4); }
  bool literal(const char (&word)[6]) { return match(word, 5); }
  bool match(const char* word, std::size_t size) {
    if (static_cast<std::size_t>(end_ - p_) < size || std::memcmp(p_, word, size) != 0) return false;
    p_ += size;
    return true;
  }

  static bool is_digit(char c) { return c >= '0' && c <= '9'; }
  static int hex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }
  // Four hex digits at p_ (advanced past them), or -1.
  int hex4() {
    if (end_ - p_ < 4) return -1;
    const int a = hex(p_[0]), b = hex(p_[1]), c = hex(p_[2]), d = hex(p_[3]);
    if ((a | b | c | d) < 0) return -1;
    p_ += 4;
    return (a << 12) | (b << 8) | (c << 4) | d;
  }
  void append_utf8(unsigned cp) {
    if (cp < 0x80) {
      buffer_.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      buffer_.push_back(static_cast<char>(0xc0 | (cp >> 6)));
      buffer_.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    } else if (cp < 0x10000) {
      buffer_.push_back(static_cast<char>(0xe0 | (cp >> 12)));
      buffer_.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
      buffer_.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    } else {
      buffer_.push_back(static_cast<char>(0xf0 | (cp >> 18)));
      buffer_.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3f)));
      buffer_.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
      buffer_.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    }
  }
  // Stops at '"', '\\' or a control character (bytes from 0x80 are taken as they are).
  static bool plain(char c) { return c != '"' && c != '\\' && static_cast<unsigned char>(c) >= 0x20; }
  // The first byte from `p` that is not plain(), or `end`: 16 bytes at a time where SSE2 is.
  static const char* plain_run(const char* p, const char* end) {
#ifdef __SSE2__
    const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\'), control = _mm_set1_epi8(0x1f);
    while (end - p >= 16) {
      const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
      const __m128i stop = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(bytes, quote), _mm_cmpeq_epi8(bytes, backslash)),
                                        _mm_cmpeq_epi8(_mm_max_epu8(bytes, control), control));  // <= 0x1f
      if (const int mask = _mm_movemask_epi8(stop)) return p + __builtin_ctz(static_cast<unsigned>(mask));
      p += 16;
    }
#endif
    while (p != end && plain(*p)) ++p;
    return p;
  }

  // The string at p_ (its opening quote), unescaped: a view of the input when it has no escape,
  // else of buffer_. p_ ends past the closing quote.
  bool string(std::string_view& out) {
    const char* start = p_ + 1;
    const char* p = plain_run(start, end_);
    if (p != end_ && *p == '"') [[likely]] {
      out = std::string_view(start, static_cast<std::size_t>(p - start));
      p_ = p + 1;
      return true;
    }
    p_ = p;
    return escaped(start, out);
  }

  // The rest of a string from p_ on, which stopped at an escape, a control character or the end.
  [[gnu::noinline]] bool escaped(const char* start, std::string_view& out) {
    buffer_.assign(start, p_);
    for (;;) {
      if (p_ == end_) return false;
      const char c = *p_;
      if (c == '"') break;
      if (c != '\\') {
        if (static_cast<unsigned char>(c) < 0x20) return false;
        const char* run = p_;
        p_ = plain_run(p_, end_);
        buffer_.append(run, p_);
        continue;
      }
      if (++p_ == end_) return false;
      switch (*p_++) {
        case '"': buffer_.push_back('"'); break;
        case '\\': buffer_.push_back('\\'); break;
        case '/': buffer_.push_back('/'); break;
        case 'b': buffer_.push_back('\b'); break;
        case 'f': buffer_.push_back('\f'); break;
        case 'n': buffer_.push_back('\n'); break;
        case 'r': buffer_.push_back('\r'); break;
        case 't': buffer_.push_back('\t'); break;
        case 'u': {
          const int first = hex4();
          if (first < 0) return false;
          if (first < 0xd800 || first > 0xdfff) {
            append_utf8(static_cast<unsigned>(first));
            break;
          }
          if (first > 0xdbff) return false;  // a trailing surrogate first: the parser refuses it
          if (end_ - p_ < 2 || p_[0] != '\\' || p_[1] != 'u') return false;
          p_ += 2;
          const int second = hex4();
          if (second < 0xdc00 || second > 0xdfff) return false;
          append_utf8(((static_cast<unsigned>(first) - 0xd800) << 10) + (static_cast<unsigned>(second) - 0xdc00) +
                      0x10000);
          break;
        }
        default: return false;
      }
    }
    ++p_;
    out = buffer_;
    return true;
  }

  // The 8 bytes at `p` (all readable) as one little-endian word.
  static std::uint64_t word_at(const char* p) {
    std::uint64_t word;
    std::memcpy(&word, p, 8);
    if constexpr (std::endian::native != std::endian::little) word = __builtin_bswap64(word);
    return word;
  }
  // How many of a word's bytes (word_at) are digits before the first other byte, 0..8.
  static int leading_digits(std::uint64_t word) {
    // A byte is a digit when it xor '0' is at most 9: then neither it nor it + 0x76 has bit 7 set.
    // A carry out of a byte flags a byte after one already flagged, so the lowest flag is right.
    const std::uint64_t x = word ^ 0x3030303030303030u;
    const std::uint64_t stop = ((x + 0x7676767676767676u) | x) & 0x8080808080808080u;
    return stop ? __builtin_ctzll(stop) / 8 : 8;
  }
  // The digits at p_ on, 8 at a time where 8 bytes are readable: how many (p_ left past them).
  std::size_t skip_digits() {
    const char* const first = p_;
    while (end_ - p_ >= 8) {
      const int n = leading_digits(word_at(p_));
      p_ += n;
      if (n < 8) return static_cast<std::size_t>(p_ - first);
    }
    while (digit_at(p_, end_)) ++p_;
    return static_cast<std::size_t>(p_ - first);
  }

  // The digits among the 8 bytes at `p` (all readable) up to the first other byte, appended to
  // `mant` (mant * 10^n + their value); n, 0..8. SWAR on the bytes as one little-endian word.
  static int eight_digits(const char* p, std::uint64_t& mant) {
    static constexpr std::uint64_t kPowers[9] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000};
    const std::uint64_t word = word_at(p);
    const int n = leading_digits(word);
    if (n == 0) return 0;
    // The n digits moved up, zero digits below them, and the 8 summed (fast_float's reduction);
    // a borrow out of a byte past the digits only reaches bytes shifted out.
    std::uint64_t v = (word - 0x3030303030303030u) << (8 * (8 - n));
    v = v * 10 + (v >> 8);
    v = (((v & 0x000000FF000000FFu) * (100 + (1000000ull << 32))) +
         (((v >> 16) & 0x000000FF000000FFu) * (1 + (10000ull << 32)))) >> 32;
    mant = mant * kPowers[n] + v;
    return n;
  }

  static bool digit_at(const char* p, const char* end) { return p != end && static_cast<unsigned char>(*p - '0') <= 9; }

  // The number at p_, as basic_parser::parse_number() reads it (see the top of this file).
  bool number(JsonNumber& out) {
    const char* const end = end_;
    const char* q = p_;
    if (q == end) return false;
    const bool negative = *q == '-';
    q += negative ? 1 : 0;
    if (!digit_at(q, end)) return false;
    const bool fast = end - q >= 16 + 1 + 16;  // basic_parser's fast path
    std::uint64_t mant = 0;
    int whole = 0;  // digits of the integer part that count
    if (*q == '0') {
      ++q;
      if (digit_at(q, end)) return false;  // "01": the parser refuses it
    } else {
      do {
        if (++whole > 15) return false;
        mant = mant * 10 + static_cast<unsigned>(*q++ - '0');
      } while (digit_at(q, end));
    }
    if (q == end || (*q != '.' && (*q | 32) != 'e')) {
      // At most 15 digits: an int64 either way ("-0" is 0).
      out.text = std::string_view(p_, static_cast<std::size_t>(q - p_));
      p_ = q;
      const auto value = static_cast<std::int64_t>(mant);
      out.is_double = false;
      out.integer = negative ? -value : value;
      return true;
    }
    std::int32_t bias = 0;
    if (*q == '.' && fast && whole <= 2) {
      // The common case, a logprob's "-0.43503523": at most 2 digits before the point, so the
      // fast path's at-once digits are min(count, 16) whatever the count, and one pass over the
      // fraction takes them, 8 bytes at a time (33 bytes follow the sign: 16 are readable here).
      const char* const fraction = ++q;
      int taken = 0;
      for (int word = 0; word < 2; ++word) {
        const int n = eight_digits(q, mant);
        q += n;
        taken += n;
        if (n < 8) break;
      }
      if (taken == 0) return false;
      while (digit_at(q, end) && mant <= 9007199254740991u) mant = mant * 10 + static_cast<unsigned>(*q++ - '0');
      bias = -static_cast<std::int32_t>(q - fraction);
      while (digit_at(q, end)) ++q;
    } else if (*q == '.') {
      const char* fraction = ++q;
      while (digit_at(q, end)) ++q;
      const int count = static_cast<int>(q - fraction);
      if (count == 0) return false;
      // The fast path takes the first min(count, 16) digits at once when whole + those < 19;
      // every digit after that (and every digit on the slow path) only while mant <= 2^53 - 1,
      // and the rest are read and dropped.
      int at_once = 0;
      if (fast) {
        const int first = count < 16 ? count : 16;
        if (whole + first < 19) at_once = first;
      }
      int i = 0;
      for (; i < at_once; ++i) mant = mant * 10 + static_cast<unsigned>(fraction[i] - '0');
      for (; i < count && mant <= 9007199254740991u; ++i) mant = mant * 10 + static_cast<unsigned>(fraction[i] - '0');
      bias = -i;
    }
    bool exponent_negative = false;
    std::int32_t exponent = 0;
    if (q != end && (*q | 32) == 'e') {
      ++q;
      if (q != end && (*q == '+' || *q == '-')) exponent_negative = *q++ == '-';
      const char* first = q;
      while (digit_at(q, end)) {
        if (q - first >= 4) return false;
        exponent = exponent * 10 + (*q++ - '0');
      }
      if (q == first) return false;
    }
    out.text = std::string_view(p_, static_cast<std::size_t>(q - p_));
    p_ = q;
    out.is_double = true;
    out.real = boost::json::detail::dec_to_float(mant, bias + (exponent_negative ? -exponent : exponent), negative);
    return true;
  }

  std::string& buffer_;
  const char* p_ = nullptr;
  const char* end_ = nullptr;
};

template <class Handler>
class JsonScanner : JsonLexer {
 public:
  JsonScanner(Handler& handler, std::string& buffer, std::size_t max_depth)
      : JsonLexer(buffer), h_(handler), max_depth_(max_depth < 62 ? max_depth : 62) {}

  // True when every event of the document reached the handler and it took each one.
  bool run(std::string_view data) {
    start(data);
    boost::json::error_code ec;
    if (!h_.on_document_begin(ec)) return false;
    std::uint64_t is_object = 0;  // bit per open container: 1 an object, 0 an array
    std::size_t depth = 0;
    skip_space();
  value:
    if (p_ == end_) return false;
    switch (*p_) {
      case '{':
        if (depth + 1 >= max_depth_) return false;
        if (!h_.on_object_begin(ec)) return false;
        ++p_;
        skip_space();
        if (p_ != end_ && *p_ == '}') {
          ++p_;
          if (!h_.on_object_end(0, ec)) return false;
          goto after_value;
        }
        is_object |= std::uint64_t(1) << ++depth;
        goto key;
      case '[':
        if (depth + 1 >= max_depth_) return false;
        if (!h_.on_array_begin(ec)) return false;
        ++p_;
        skip_space();
        if (p_ != end_ && *p_ == ']') {
          ++p_;
          if (!h_.on_array_end(0, ec)) return false;
          goto after_value;
        }
        is_object &= ~(std::uint64_t(1) << ++depth);
        goto value;
      case '"': {
        std::string_view text;
        if (!string(text) || !h_.on_string({text.data(), text.size()}, text.size(), ec)) return false;
        goto after_value;
      }
      case 't':
        if (!literal("true") || !h_.on_bool(true, ec)) return false;
        goto after_value;
      case 'f':
        if (!literal("false") || !h_.on_bool(false, ec)) return false;
        goto after_value;
      case 'n':
        if (!literal("null") || !h_.on_null(ec)) return false;
        goto after_value;
      default: {
        JsonNumber number;
        if (!this->number(number)) return false;
        const boost::json::string_view text(number.text.data(), number.text.size());
        if (!(number.is_double ? h_.on_double(number.real, text, ec) : h_.on_int64(number.integer, text, ec))) {
          return false;
        }
        goto after_value;
      }
    }
  key:
    if (p_ == end_ || *p_ != '"') return false;
    {
      std::string_view name;
      if (!string(name) || !h_.on_key({name.data(), name.size()}, name.size(), ec)) return false;
    }
    if (p_ == end_ || *p_ != ':') {
      skip_space();
      if (p_ == end_ || *p_ != ':') return false;
    }
    ++p_;
    skip_space();
    goto value;
  after_value:
    if (p_ != end_ && *p_ == ',' && depth != 0) {  // the common case, before any whitespace
      ++p_;
      if (is_object >> depth & 1) {
        if (p_ != end_ && *p_ == '"') goto key;
        skip_space();
        goto key;
      }
      skip_space();
      goto value;
    }
    skip_space();
    if (depth == 0) {
      if (p_ != end_) return false;  // more after the document: the parser says how much it used
      return h_.on_document_end(ec);
    }
    if (p_ == end_) return false;
    if (*p_ == ',') {
      ++p_;
      skip_space();
      if (is_object >> depth & 1) goto key;
      goto value;
    }
    if (is_object >> depth & 1) {
      if (*p_ != '}') return false;
      ++p_;
      --depth;
      if (!h_.on_object_end(0, ec)) return false;
      goto after_value;
    }
    if (*p_ != ']') return false;
    ++p_;
    --depth;
    if (!h_.on_array_end(0, ec)) return false;
    goto after_value;
  }

 private:
  Handler& h_;
  std::size_t max_depth_;
};

}  // namespace retrace::llm
