// ShapeReader (llm/fast_scan_shape.hpp) reading on from what a stream repeats: the bytes before an
// event's "choices", a choice's bytes through its "index", the event's constant tail, the compact
// legacy logprobs object and the "text" and "logprobs" members before it (fast_scan_legacy.cpp),
// and the reader that skips logprob values. Each case reads near-miss events after each other
// through the same parsers and requires what the parser makes of each (tests/llm_scan_tally.hpp).
#include <catch2/catch.hpp>

#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz/scan_differential.hpp"
#include "tests/llm_scan_tally.hpp"

using namespace retrace;
using testing::Tally;

// ShapeReader reads on from the "choices" value of an event that begins with the bytes the last
// one did up to there: what it saw in them must hold, as if read again (a key of them repeated
// after "choices", "usage" before it, an error object), and an event that differs in them is read
// whole.
TEST_CASE("The shape reader resumes after a repeated prefix as if it had read it") {
  const std::string prefix = R"({"id":"cmpl-1","object":"text_completion","created":1796542049,"model":"m","choices":)";
  const std::string choices = R"([{"index":0,"text":" a","finish_reason":null}])";
  const std::string events[] = {
      prefix + choices + "}",
      prefix + choices + R"(,"object":"text_completion"})",
      prefix + choices + R"(,"choices":[]})",
      prefix + choices + R"(,"usage":{"prompt_tokens":1}})",
      prefix + choices + R"(,"usage":null,"usage":null})",
      prefix + "[]}",
      prefix + choices,
      prefix + choices + R"(,"error":{"message":"x"}})",
      R"({"id":"cmpl-1","object":"error","created":1796542049,"model":"m","choices":)" + choices + "}",
      R"({"id":"cmpl-1","object":"text_completion","created":1796542049,"model":"m","usage":{"prompt_tokens":4},"choices":)" + choices + "}",
      R"({"id":"cmpl-2","object":"text_completion","created":1796542049,"model":"m","choices":)" + choices + "}",
      R"({"id":"cmpl-1","object":"text_completion","object":"x","created":1796542049,"model":"m","choices":)" + choices + "}",
      prefix,
  };
  Tally tally;
  for (const std::string& first : events) {
    for (const std::string& second : events) {
      for (const std::string& third : events) {
        tally.check(first);
        tally.check(second);
        tally.check(third);
      }
    }
  }
  CHECK(tally.fast.shaped() > 0);
}

TEST_CASE("The shape reader resumes a choice after its repeated index as if it had read it") {
  // Each choice after each other (ShapeReader keeps the last choice's bytes through its "index"):
  // those that begin with the same bytes but a value that goes on, another value, no comma after,
  // a second "index", other spacing, or no "index" first must read as the parser reads them.
  const std::string head = R"({"id":"c","object":"text_completion","choices":[)";
  const std::string choices[] = {
      R"({"index":0,"text":" a","finish_reason":null})",   R"({"index":1,"text":" a","finish_reason":null})",
      R"({"index":05,"text":" a"})",                       R"({"index":0.5,"text":" a"})",
      R"({"index":0e1,"text":" a"})",                      R"({"index":0 ,"text":" a"})",
      R"({"index":0})",                                    R"({"index":0,})",
      R"({"index":0,"index":1,"text":" a"})",              R"({"index":null,"text":" a"})",
      R"({"index":nullx,"text":" a"})",                    R"({ "index":0,"text":" a"})",
      R"({"text":" a","index":0})",                        R"({"index":0,"text":" a"},{"index":0,"text":" b"})",
      R"({"index":-1,"text":" a"})",                       R"({"index":0,"text":" a","finish_reason":"stop"})",
  };
  Tally tally;
  for (const std::string& first : choices)
    for (const std::string& second : choices) {
      tally.check(head + first + "]}");
      tally.check(head + second + "]}");
    }
  CHECK(tally.fast.shaped() > 100);
}

TEST_CASE("The shape reader skipping logprob values takes the same events on numbers of every digit count") {
  // Each number as a legacy token's logprob and label value and as a chat entry's and its
  // alternative's: ScanAndParse::agree also requires the reader that checks numbers without
  // converting them to read (or give up on) each event as the converting one does.
  std::mt19937_64 random(45);
  fuzzing::ScanAndParse fast;
  std::size_t events = 0;
  const auto check = [&](const std::string& number) {
    for (const std::string& event :
         {R"({"choices":[{"index":0,"text":"a","logprobs":{"tokens":["a"],"token_logprobs":[)" + number +
              R"(],"top_logprobs":[{"a":)" + number + R"(}]}}]})",
          R"({"choices":[{"index":0,"delta":{"content":"a"},"logprobs":{"content":[{"token":"a","logprob":)" + number +
              R"(,"top_logprobs":[{"token":"a","logprob":)" + number + "}]}]}}]}"}) {
      ++events;
      INFO(event);
      CHECK(fast.agree(event));
    }
  };
  for (const char* sign : {"", "-", "+", "--"}) {
    for (int whole = 0; whole <= 17; ++whole) {
      for (int fraction = -1; fraction <= 20; ++fraction) {
        for (const char* exponent : {"", "e5", "E-3", "e+12", "e-308", "e1234", "e12345", "e", "e+", "x"}) {
          std::string number = sign;
          if (whole == 0) number += '0';
          for (int i = 0; i < whole; ++i) number += static_cast<char>((i == 0 ? '1' : '0') + random() % (i == 0 ? 9 : 10));
          if (fraction >= 0) number += '.';
          for (int i = 0; i < fraction; ++i) number += static_cast<char>('0' + random() % 10);
          check(number + exponent);
        }
      }
    }
  }
  for (const char* number : {"01", "-01.5", "1.", "-.5", ".5", "0.e1", "00", "-0", "1e-0000", "\"1\"", "null", "[1]"})
    check(number);
  INFO(events << " events, " << fast.shaped() << " read by the shape reader");
  CHECK(fast.shaped() >= events / 5);  // most of the numbers made are ones the lexer refuses
}

TEST_CASE("The shape reader reads a repeated tail at once as if it had read it") {
  // Each event after each other (ShapeReader keeps the bytes after the last choice's last member
  // that made a change, to the end): a tail that differs by one byte, keys that share a prefix, a
  // key of the tail seen before it in the choice or at the top, spacing, escapes, more choices, an
  // event shorter than the tail, and a tail whose bytes sit inside another value.
  const std::string head = R"({"id":"c","object":"text_completion","choices":[{"index":0,"text":" a","logprobs":{"tokens":[" a"],"token_logprobs":[-0.5],"top_logprobs":[{" a":-0.5}],"text_offset":[0]})";
  const std::string tail = R"(,"finish_reason":null,"stop_reason":null}]})";
  const std::string events[] = {
      head + tail,
      head + R"(,"finish_reason":null,"stop_reason":nulx}]})",
      head + R"(,"finish_reason":null,"stop_reasoX":null}]})",
      head + R"(,"finish_reason":null,"finish_reason":null}]})",
      head + R"(,"finish_reasons":null,"stop_reason":null}]})",
      head + R"(,"finish_reason":"stop","stop_reason":null}]})",
      head + R"( , "finish_reason" : null , "stop_reason" : null } ] } )" "\r\n",
      head + R"(,"finish_\u0072eason":null,"stop_reason":null}]})",
      head + R"(,"finish_reason":null,"stop_reason":null}],"usage":null})",
      head + R"(,"finish_reason":null,"stop_reason":null}],"usage":{"prompt_tokens":1}})",
      head + R"(,"finish_reason":null,"stop_reason":null}],"object":"error"})",
      head + R"(,"finish_reason":null,"stop_reason":null}],"choices":[]})",
      R"({"usage":null,"choices":[{"index":0,"text":" a"}],"usage":null})",
      R"({"id":"c","choices":[{"index":0,"finish_reason":null,"text":" a","finish_reason":null,"stop_reason":null}]})",
      R"({"id":"c","choices":[{"index":0,"text":" a"},{"index":1,"text":" b","finish_reason":null,"stop_reason":null}]})",
      R"({"id":"c","choices":[{"index":0,"text":" b","x":{"y":1,"finish_reason":null,"stop_reason":null}]})",
      R"({"id":"c","choices":[{"index":0,"text":null,"logprobs":null,"finish_reason":null,"stop_reason":null}]})",
      R"({"id":"c","choices":[{"index":0,"delta":{"content":"a"},"logprobs":null,"finish_reason":null}]})",
      R"({"choices":[{"index":0,"text":"a","finish_reason":null,"stop_reason":null}]})",
      R"({"id":"c","choices":[]})",
      tail,
  };
  // Each event in a buffer of its own, freed after it is read, as a stream's are (the ASan tier
  // sees a tail kept from bytes no longer there).
  Tally tally;
  const auto check = [&](const std::string& event) {
    const std::unique_ptr<char[]> own(new char[event.size()]);
    std::copy(event.begin(), event.end(), own.get());
    tally.check(std::string_view(own.get(), event.size()));
  };
  for (const std::string& first : events) {
    for (const std::string& second : events) {
      for (const std::string& third : {events[0], second}) {
        check(first);
        check(second);
        check(third);
      }
    }
  }
  CHECK(tally.fast.shaped() > 1000);
}

TEST_CASE("The shape reader reads a compact legacy logprobs object as it reads any other") {
  // ShapeReader reads {"tokens":[..],"token_logprobs":[..],"top_logprobs":[{..}],"text_offset":[..]}
  // of one token in one pass when it is compact; each object that differs from that layout by a
  // little (spacing, order, a key that shares a prefix, two tokens, nulls, an empty or duplicate
  // top object, escapes, a double offset, a cut) must read as the parser reads it.
  const std::string head = R"({"id":"c","object":"text_completion","choices":[{"index":0,"text":" a","logprobs":)";
  const std::string tail = R"(,"finish_reason":null}]})";
  // The compact object of one token, its top_logprobs element and what follows "text_offset":[
  // given; `top` and "7]}" make it whole.
  const auto with = [](const std::string& element, const std::string& offset) {
    return R"({"tokens":[" a"],"token_logprobs":[-0.5],"top_logprobs":[)" + element + R"(],"text_offset":[)" + offset;
  };
  const std::string top = R"({" a":-0.5})";
  std::vector<std::string> objects = {
      with(top, "7]}"),
      with(R"({" a":-0.5,"b":-1.25e-3})", "7]}"),
      with(R"({" a" :-0.5})", "7]}"),
      with(R"({" a":-0.5 })", "7]}"),
      with(R"({" a":-0.5," a":-1})", "7]}"),
      with(R"({" \u0061":-0.5,"\" a":-1})", "7]}"),
      with(R"({" a":-0.5;"b":-1})", "7]}"),
      with(R"({" a":"-0.5"})", "7]}"),
      with(R"({" a":null})", "7]}"),
      with("null", "7]}"),
      with("{}", "7]}"),
      with(top, "7],\"tokens\":[]}"),
      with(top, "7"),
      R"({"tokens":[" a"], "token_logprobs":[-0.5],"top_logprobs":[{" a":-0.5}],"text_offset":[7]})",
      R"({"token_logprobs":[-0.5],"tokens":[" a"],"top_logprobs":[{" a":-0.5}],"text_offset":[7]})",
      R"({"tokens":[" a"],"token_logprobs":[-0.5],"top_logprobs":[{" a":-0.5}],"text_offsets":[7]})",
      R"({"tokens":[" a","b"],"token_logprobs":[-0.5,-1],"top_logprobs":[{" a":-0.5},{"b":-1}],"text_offset":[7,9]})",
      R"({"tokens":[" a"],"token_logprobs":[null],"top_logprobs":[{" a":-0.5}],"text_offset":[7]})",
      R"({"tokens":["\n\u00e9"],"token_logprobs":[-0.5],"top_logprobs":[{"\n\u00e9":-0.5}],"text_offset":[7]})",
      R"({"tokens":[" a"],"token_logprobs":[-01],"top_logprobs":[{" a":1e99999}],"text_offset":[7]})",
      R"({"tokens":[1],"token_logprobs":[-0.5],"top_logprobs":[{" a":-0.5}],"text_offset":[7]})",
      R"({"tokens":[" a"],"token_logprobs":[-0.5],"top_logprobs":[{" a":-0.5,)",
  };
  // Offsets number() reads as integers, as doubles or not at all, and closings that are not "]}".
  for (const char* offset : {"7.0]}", "null]}", "0]}", "05]}", "-3]}", "-0]}", "123456789012345]}", "1234567890123456]}",
                             "12345678901234567890]}", "7e2]}", "10]}", "]}", "7]]}", "7 ]}", "7]]", "7] }"}) {
    objects.push_back(with(top, offset));
  }
  Tally tally;
  for (const std::string& first : objects) {
    for (const std::string& second : objects) {
      tally.check(head + first + tail);
      tally.check(head + second + tail);
    }
  }
  for (const std::string& object : objects) tally.check(head + object);  // the event cut after it
  CHECK(tally.fast.shaped() > 500);
}

TEST_CASE("The shape reader reads a choice's text and logprobs after its repeated index as any other") {
  // Past a repeated {"index":0, ShapeReader reads "text":"..","logprobs":{..} in one pass when they
  // come so: each choice near that (null, escaped or spaced text, the keys in the other order or
  // sharing a prefix, a logprobs object it refuses, a key repeated after, the choice ended or
  // going on after them) after each other must read as the parser reads it.
  const std::string head = R"({"id":"c","object":"text_completion","choices":[)";
  const std::string logprobs = R"({"tokens":[" a"],"token_logprobs":[-0.5],"top_logprobs":[{" a":-0.5}],"text_offset":[0]})";
  const std::string choices[] = {
      R"({"index":0,"text":" a","logprobs":)" + logprobs + R"(,"finish_reason":null})",
      R"({"index":0,"text":" a","logprobs":)" + logprobs + "}",
      R"({"index":0,"text":" a","logprobs":)" + logprobs + " }",
      R"({"index":0,"text":" a","logprobs":)" + logprobs + R"( , "finish_reason":"stop"})",
      R"({"index":0,"text":" a","logprobs":)" + logprobs + R"(,"text":" b"})",
      R"({"index":0,"text":" a","logprobs":)" + logprobs + R"(,"logprobs":null})",
      R"({"index":0,"text":" a","logprobs":)" + logprobs + R"(,})",
      R"({"index":0,"text":" a","logprobs":)" + logprobs + R"(])",
      R"({"index":0,"text":"\n\u00e9\"","logprobs":)" + logprobs + "}",
      R"({"index":0,"text":null,"logprobs":)" + logprobs + "}",
      R"({"index":0,"text":"","logprobs":)" + logprobs + "}",
      R"({"index":0,"text":" a","logprobs":)" + logprobs + R"(;"finish_reason":null})",
      R"({"index":0,"text" :" a","logprobs":)" + logprobs + "}",
      R"({"index":0,"text":" a", "logprobs":)" + logprobs + "}",
      R"({"index":0,"texts":" a","logprobs":)" + logprobs + "}",
      R"({"index":0,"logprobs":)" + logprobs + R"(,"text":" a"})",
      R"({"index":0,"text":" a","logprobs":null})",
      R"({"index":0,"text":" a","logprobs":{"tokens":[" a"],"tokens":[" b"]}})",
      R"({"index":0,"text":" a","logprobs":{"tokens":[" a"],"token_logprobs":["x"]}})",
      R"({"index":0,"text":" a","logprobs":{}})",
      R"({"index":0,"text":" a","logprobs":)" + logprobs + R"(},{"index":0,"text":" b","logprobs":)" + logprobs + "}",
      R"({"index":1,"text":" a","logprobs":)" + logprobs + "}",
  };
  Tally tally;
  for (const std::string& first : choices) {
    for (const std::string& second : choices) {
      tally.check(head + first + "]}");
      tally.check(head + second + "]}");
    }
  }
  CHECK(tally.fast.shaped() > 500);
}
