// The scanner in front of the fast path's SAX parser (llm/fast_scan.hpp) against Boost.JSON's
// basic_parser: wherever the scanner reads an event to its end, the parser must accept it with
// the very same handler events and values (doubles bit for bit), and the fast path's parser with
// the scanner must make the same choices, logprobs, token ids and usage as without it, or give up
// alike. On every line of the shape corpus, the fuzz corpora, generated events of every size and
// every one-byte mutation of a repeated event (fuzz/scan_differential.hpp holds the check).
// ShapeReader's reading on from a stream's repeated bytes: tests/llm_shape_reader_test.cpp.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include "fuzz/scan_differential.hpp"
#include "tests/llm_scan_tally.hpp"
#include "tests/test_data.hpp"

using namespace retrace;
using fuzzing::ScanVerdict;
using testing::Tally;
namespace fs = std::filesystem;

namespace {

// Each line of `bytes`, an SSE "data: " prefix taken off.
std::vector<std::string> lines_of(const std::string& bytes) {
  std::vector<std::string> lines;
  std::istringstream in(bytes);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("data: ", 0) == 0) line.erase(0, 6);
    lines.push_back(line);
  }
  return lines;
}

// Token text of about `length` bytes: escapes, surrogate pairs, raw UTF-8 and invalid bytes.
std::string token_text(std::size_t length, std::mt19937_64& random) {
  static const char* pieces[] = {"a",       " the", "\\n",          "\\\"",     "\\\\", "\\u00e9", "\\ud83d\\ude00",
                                 "\xc3\xa9", "/",    "\\t",          "\\u0000", "\xff", "\\/",     "\\b\\f\\r",
                                 "\\uDBFF\\uDFFF", "\\u20AC", "\x7f", "0"};
  std::string text;
  while (text.size() < length) text += pieces[random() % (sizeof pieces / sizeof pieces[0])];
  return text;
}

// A logprob as servers spell it (Python's repr, Rust's, C's %g).
std::string logprob_text(std::mt19937_64& random) {
  static const char* spellings[] = {"-0.5", "-1.0452473", "-1e-3", "-0", "0", "-1E+2", "-0.0", "-12.375",
                                    "-9.999999999999999e-5", "-3.4028235e38", "-1e-320", "-0.00012337400403339416",
                                    "-2.3841855067985307e-07", "-17.62890625", "-0.6931471805599453"};
  return spellings[random() % (sizeof spellings / sizeof spellings[0])];
}

// A number in one of many spellings: short and long mantissas, exponents, huge and tiny values.
std::string number_text(std::mt19937_64& random) {
  auto digits = [&](std::size_t count, bool first_nonzero) {
    std::string out;
    for (std::size_t i = 0; i < count; ++i) out += char('0' + (i == 0 && first_nonzero ? 1 + random() % 9 : random() % 10));
    return out;
  };
  std::string number = random() % 2 ? "-" : "";
  const std::size_t whole = random() % 4 == 0 ? 0 : 1 + random() % 22;
  number += whole == 0 ? "0" : digits(whole, true);
  if (random() % 4 != 0) number += "." + digits(1 + random() % 26, false);
  if (random() % 4 == 0) {
    number += random() % 2 ? "e" : "E";
    const int sign = static_cast<int>(random() % 3);
    number += sign == 0 ? "" : sign == 1 ? "+" : "-";
    number += digits(1 + random() % 4, false);
  }
  return number;
}

std::string chat_event(std::size_t length, std::size_t top, std::mt19937_64& random) {
  const std::string text = token_text(length, random);
  std::string alternatives;
  for (std::size_t k = 0; k < top; ++k) {
    alternatives += std::string(k ? "," : "") + R"({"token":")" + (k ? token_text(1 + k, random) : text) +
                    R"(","logprob":)" + number_text(random) + R"(,"bytes":[97,)" + std::to_string(k) + "]}";
  }
  return R"({"id":"chatcmpl-1","object":"chat.completion.chunk","created":1796542049,"model":"m",)"
         R"("choices":[{"index":0,"delta":{"content":")" +
         text + R"("},"logprobs":{"content":[{"token":")" + text + R"(","logprob":)" + number_text(random) +
         R"(,"bytes":[32,116],"top_logprobs":[)" + alternatives + R"(]}]},"finish_reason":null}]})";
}

std::string completions_event(std::size_t length, std::size_t top, std::mt19937_64& random) {
  const std::string token = token_text(length, random);
  std::string object;
  for (std::size_t k = 0; k < top; ++k) {
    object += std::string(k ? "," : "") + "\"" + (k ? "alt" + std::to_string(k) : token) + "\":" + number_text(random);
  }
  return R"({"id":"cmpl-1","object":"text_completion","created":1796542049,"model":"m","choices":[{"index":0,"text":")" +
         token + R"(","logprobs":{"tokens":[")" + token + R"("],"token_logprobs":[)" + number_text(random) +
         R"(],"top_logprobs":[{)" + object + R"(}],"text_offset":[)" + std::to_string(random() % 100000) +
         R"(]},"finish_reason":null,"stop_reason":null,"token_ids":[)" + std::to_string(random() % 200000) +
         R"(]}],"usage":{"prompt_tokens":7,"completion_tokens":)" + number_text(random) + "}}";
}

// `value` written as JSON, its values numbered in document order: the one numbered `target`
// written as `replacement` (when not empty), or, when it is an object member and `duplicate`, its
// key and value written twice.
void write_json(std::string& out, const boost::json::value& value, int& position, int target,
                const std::string& replacement, bool duplicate) {
  const int at = position++;
  if (at == target && !replacement.empty()) {
    out += replacement;
    return;
  }
  if (const auto* object = value.if_object()) {
    out += '{';
    bool first = true;
    for (const auto& member : *object) {
      const int member_at = position;
      std::string pair = boost::json::serialize(boost::json::value(member.key())) + ":";
      write_json(pair, member.value(), position, target, replacement, duplicate);
      for (int copy = 0; copy < (member_at == target && duplicate ? 2 : 1); ++copy) {
        out += first ? "" : ",";
        out += pair;
        first = false;
      }
    }
    out += '}';
  } else if (const auto* array = value.if_array()) {
    out += '[';
    for (std::size_t i = 0; i < array->size(); ++i) {
      if (i) out += ',';
      write_json(out, (*array)[i], position, target, replacement, duplicate);
    }
    out += ']';
  } else {
    out += boost::json::serialize(value);
  }
}

}  // namespace

TEST_CASE("The scanner and the parser agree on every value of a repeated event replaced or its key duplicated") {
  // Each value of each event in turn: every key's pair written twice, and the value replaced by
  // one of every type and edge (bytes out of 0..255, ids and counts out of range, nulls, strings
  // where numbers go, containers where strings go, "error" where the object's name goes).
  const char* events[] = {
      R"({"id":"chatcmpl-1","object":"chat.completion.chunk","created":1796542049,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":" the","reasoning":null,"refusal":null,"tool_calls":null},"logprobs":{"content":[{"token":" the","logprob":-0.25,"bytes":[32,116,104,101],"id":279,"top_logprobs":[{"token":" the","logprob":-0.25,"bytes":[32,255],"id":279},{"token":"token_id:7","logprob":-1.5,"bytes":null}]}],"refusal":null},"finish_reason":null,"token_ids":[279]}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4,"reasoning_tokens":0,"completion_tokens_details":{"reasoning_tokens":0}}})",
      R"({"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":1,"text":" the","logprobs":{"tokens":[" the","\n"],"token_logprobs":[-1.0452473,null],"top_logprobs":[{" the":-1.0452473,"\n":-2.5},null],"text_offset":[12,16]},"finish_reason":"length","stop_reason":null,"message":{"content":"x"}}],"usage":null})",
  };
  const char* replacements[] = {"null", "true", "false", "0", "-1", "255", "256", "4096", "-0", "1.5", "1e2",
                                "9223372036854775807", "18446744073709551615", "\"\"", "\"error\"", "\"x\"",
                                "[]", "{}", "[1]", "[null]", "[\"a\"]", "{\"a\":1}", "[{}]", "[[]]"};
  Tally tally;
  for (const char* event : events) {
    const boost::json::value parsed = boost::json::parse(event);
    int values = 0;
    std::string whole;
    write_json(whole, parsed, values, -1, "", false);
    REQUIRE(tally.check(whole));
    for (int target = 0; target < values; ++target) {
      int position = 0;
      std::string duplicated;
      write_json(duplicated, parsed, position, target, "", true);
      tally.check(duplicated);
      for (const char* replacement : replacements) {
        position = 0;
        std::string replaced;
        write_json(replaced, parsed, position, target, replacement, false);
        tally.check(replaced);
      }
    }
  }
  INFO(tally.inputs << " inputs, " << tally.scanned << " scanned, " << tally.fast.shaped() << " shaped");
  CHECK(tally.inputs > 1900);
  CHECK(tally.fast.shaped() > 300);
}

TEST_CASE("The scanner and the parser agree on every line of the shape corpus") {
  Tally tally;
  std::vector<fs::path> all = testing::files_under(RETRACE_TEST_DATA);
  for (const fs::path& path : testing::files_under(RETRACE_SAMPLES)) all.push_back(path);
  for (const fs::path& path : all) {
    INFO(path.string());
    for (const std::string& line : lines_of(testing::read_path(path.string()))) tally.check(line);
  }
  INFO(tally.inputs << " lines, " << tally.scanned << " scanned");
  CHECK(all.size() >= 60);
  CHECK(tally.scanned > 600);
  CHECK(tally.scanned == tally.accepted);  // every line that is one JSON document, the scanner read
  CHECK(tally.fast.scanned() > 500);
  CHECK(tally.fast.shaped() > 350);  // and the shape reader read most of those alone
}

TEST_CASE("The scanner and the parser agree on every input of the fuzz corpora") {
  // As tests/llm_fast_equivalence_test.cpp: build/fuzz/corpus or RETRACE_FUZZ_CORPUS's.
  const char* chosen = std::getenv("RETRACE_FUZZ_CORPUS");
  const fs::path corpus = chosen ? fs::path(chosen) : fs::path(RETRACE_SOURCE_ROOT) / "build/fuzz/corpus";
  Tally tally;
  for (const char* target : {"fast_scan", "fast_event", "decoder", "sse"}) {
    for (const fs::path& path : testing::files_under(corpus / target)) {
      const std::string bytes = testing::read_path(path.string());
      INFO(path.string());
      tally.check(bytes);
      if (!bytes.empty()) tally.check(std::string_view(bytes).substr(1));  // fuzz_fast_event's event
      for (const std::string& line : lines_of(bytes)) tally.check(line);
    }
  }
  if (tally.inputs == 0) WARN("no fuzz corpus at " << corpus);
  INFO(tally.inputs << " inputs, " << tally.scanned << " scanned");
  CHECK(tally.scanned <= tally.inputs);
}

TEST_CASE("The scanner and the parser agree on generated events of every size") {
  std::mt19937_64 random(21);
  Tally tally;
  // Events as servers write them: the scanner reads every one.
  for (std::size_t top = 0; top <= 5; ++top) {
    for (int repeat = 0; repeat < 50; ++repeat) {
      const std::string logprob = logprob_text(random);
      const std::string text = token_text(1 + random() % 12, random);
      std::string alternatives;
      for (std::size_t k = 0; k < top; ++k) {
        alternatives += std::string(k ? "," : "") + R"({"token":")" + token_text(1 + k, random) + R"(","logprob":)" +
                        logprob_text(random) + R"(,"bytes":[97]})";
      }
      CHECK(tally.check(R"({"id":"c","object":"chat.completion.chunk","created":1796542049,"model":"m","choices":[{"index":0,"delta":{"content":")" +
                        text + R"("},"logprobs":{"content":[{"token":")" + text + R"(","logprob":)" + logprob +
                        R"(,"bytes":[32],"top_logprobs":[)" + alternatives + R"(]}]},"finish_reason":null}]})"));
    }
  }
  CHECK(tally.scanned == 300);
  CHECK(tally.fast.shaped() == 300);
  std::size_t events = 300;
  // 0 to 5 alternatives, tokens of 1 byte to 100 KB, numbers of every length.
  for (std::size_t length : {1, 2, 5, 16, 64, 300, 4096, 102400}) {
    for (std::size_t top = 0; top <= 5; ++top) {
      for (int repeat = 0; repeat < (length > 1000 ? 2 : 24); ++repeat) {
        tally.check(chat_event(length, top, random));
        tally.check(completions_event(length, top, random));
        events += 2;
      }
    }
  }
  // Numbers at every distance from the end of the event: the parser reads a fraction's digits
  // one way when 33 bytes or more follow the sign and another way when fewer do.
  for (int i = 0; i < 3000; ++i) {
    const std::string number = number_text(random);
    tally.check(R"({"choices":[{"index":0,"logprobs":{"tokens":["a"],"token_logprobs":[)" + number + "]" +
                std::string(random() % 40, ' ') + "}}]}");
    tally.check(number);
    tally.check(number + std::string(random() % 40, ' '));
    events += 3;
  }
  INFO(events << " events, " << tally.scanned << " scanned");
  // The scanner leaves some numbers to the parser (long integer parts, long exponents), nothing else.
  CHECK(tally.scanned >= events * 6 / 10);
}

TEST_CASE("The scanner and the parser agree on every one byte mutation of a repeated event") {
  const std::string events[] = {
      R"({"id":"chatcmpl-1","object":"chat.completion.chunk","created":1796542049,"model":"m","choices":[{"index":0,"delta":{"content":" \u00e9"},"logprobs":{"content":[{"token":" \u00e9","logprob":-0.00012337400403339416,"bytes":[32,195,169],"top_logprobs":[{"token":" \u00e9","logprob":-0.0001,"bytes":[32,195,169]},{"token":"\ud83d\ude00","logprob":-9.5e-3,"bytes":[240,159,152,128]}]}]},"finish_reason":null}]})",
      R"({"id":"cmpl-1","object":"text_completion","created":1796542049,"model":"m","choices":[{"index":0,"text":" the","logprobs":{"tokens":[" the"],"token_logprobs":[-1.0452473],"top_logprobs":[{" the":-1.0452473,"\n":-2.5}],"text_offset":[12]},"finish_reason":null,"stop_reason":null,"token_ids":[279]}]})",
      R"({"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":" w","logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":9,"total_tokens":12,"completion_tokens_details":{"reasoning_tokens":2}}})",
      " {\"choices\" : [ {\"index\" : 1 , \"delta\" : {\"content\" : \"\\u00e9\"} } ] }\r\n",
  };
  const char replacements[] = {'"', '\\', '{', '}', '[', ']', ',', ':', '0', '9', '-', '+', 'e', '.', ' ',
                               'x', 'u', 'n', 't', '\x01', '\xff', '\0'};
  Tally tally;
  for (const std::string& event : events) {
    INFO(event);
    REQUIRE(tally.check(event));
    for (std::size_t at = 0; at < event.size(); ++at) {
      for (char c : replacements) {
        std::string flipped = event;
        flipped[at] = c;
        tally.check(flipped);
        std::string inserted = event;
        inserted.insert(at, 1, c);
        tally.check(inserted);
      }
      tally.check(std::string(event).erase(at, 1));
    }
  }
  // Every prefix of each event, in a buffer of its own size (the ASan tier sees a read past it).
  for (const std::string& event : events) {
    for (std::size_t size = 0; size < event.size(); ++size) {
      const std::unique_ptr<char[]> exact(new char[size == 0 ? 1 : size]);
      std::copy(event.begin(), event.begin() + static_cast<std::ptrdiff_t>(size), exact.get());
      tally.check(std::string_view(exact.get(), size));
    }
  }
  // Keys of a choice reordered and duplicated, and the same event twice in one buffer.
  const std::string reordered[] = {
      R"({"choices":[{"text":"a","index":0,"finish_reason":null}]})",
      R"({"choices":[{"index":0,"text":"a","text":"b"}]})",
      R"({"choices":[{"index":0,"text":"a"}],"choices":[]})",
      R"({"usage":{"prompt_tokens":1,"prompt_tokens":2},"choices":[{"index":0,"text":"a"}]})",
      R"({"choices":[{"index":0,"text":"a"}]}{"choices":[{"index":0,"text":"a"}]})",
  };
  for (const std::string& event : reordered) tally.check(event);
  INFO(tally.inputs << " inputs, " << tally.scanned << " scanned");
  CHECK(tally.inputs > 10000);
}

// The scanner's numbers against the parser's, bit for bit: every integer-part length (0 to 20
// digits) by every fraction length (none, 1 to 25 digits) by exponents (none, small, at the ends
// of the double range, subnormal), signed and not, each both where the parser's fast path reads it
// (33 bytes or more after the sign) and where its slow one does, in random, all-0 and all-9 digits.
TEST_CASE("The scanner reads numbers of every digit count as the parser does bit for bit") {
  std::mt19937_64 random(44);
  const char* exponents[] = {"", "e5", "E-3", "e+12", "e-308", "e-320", "e308", "e-30"};
  std::size_t checked = 0, scanned = 0, differs = 0;
  const auto check = [&](const std::string& number) {
    for (const std::string& data : {number, number + std::string(40, ' '), "[" + number + R"(,"0123456789012345678901234567890123456789"])"}) {
      ++checked;
      const ScanVerdict verdict = fuzzing::scan_against_parser(data);
      if (verdict == ScanVerdict::differs) {
        ++differs;
        FAIL_CHECK("differs: " << data);
      }
      if (verdict == ScanVerdict::scanned) ++scanned;
    }
  };
  for (const char* sign : {"", "-"}) {
    for (int whole = 0; whole <= 20; ++whole) {
      for (int fraction = -1; fraction <= 25; ++fraction) {
        for (const char* exponent : exponents) {
          for (int repeat = 0; repeat < 24; ++repeat) {
            const char fill = repeat == 0 ? '0' : repeat == 1 ? '9' : 0;
            const auto digit = [&] { return fill ? fill : static_cast<char>('0' + random() % 10); };
            std::string number = sign;
            if (whole == 0) number += '0';
            for (int i = 0; i < whole; ++i) number += i == 0 ? static_cast<char>('1' + random() % 9) : digit();
            if (fraction >= 0) number += '.';
            for (int i = 0; i < fraction; ++i) number += digit();
            check(number + exponent);
          }
        }
      }
    }
  }
  for (const char* number : {"-0", "-0.0", "0.0", "4.9406564584124654e-324", "2.2250738585072011e-308",
                             "1.7976931348623157e308", "9007199254740993.0", "0.30000000000000004",
                             "-0.00000000000000000000001", "0.1234567890123456789", "1.", "0.e1", "-.5", "01.5"}) {
    check(number);
  }
  INFO(checked << " numbers, " << scanned << " scanned");
  CHECK(differs == 0);
  CHECK(scanned >= checked * 6 / 10);
}
