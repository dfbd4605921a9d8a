// The fast path (llm/fast_event.cpp) and the general path (Boost.JSON's DOM) must decode alike,
// tokens, parts, usage, notes and errors, on: every event of the shape corpus (tests/data and the
// shared llama.cpp samples), framed as the recorder frames them; the fuzz corpora; generated events
// of growing size (thousands of them, tokens and alternatives in every spelling); and values a
// second JSON parser would judge apart from Boost.JSON (issue 44 tried simdjson for the fast path:
// bench/RESULTS.md).
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "fuzz/decoder_differential.hpp"
#include "llm/fast_logprobs.hpp"
#include "llm/llm.hpp"
#include "tests/test_data.hpp"

using namespace retrace;
using namespace retrace::llm;
namespace fs = std::filesystem;

namespace {

// Decodes `bytes` as the recorder does (feed_sse over the whole body) or as one body, fast path on
// and off; both must agree. Returns the events the fast path decoded.
std::size_t agree_on(Dialect dialect, const std::string& bytes, bool streamed) {
  auto feed = [&](ResponseDecoder& decoder) {
    if (streamed) {
      SseParser parser;
      feed_sse(parser, bytes, 1000, &decoder, nullptr);
    } else {
      decoder.on_body(bytes, 1000);
    }
  };
  std::size_t fast_events = 0;
  const Exchange fast = fuzzing::decode_with(dialect, true, streamed, feed, &fast_events);
  const Exchange general = fuzzing::decode_with(dialect, false, streamed, feed);
  CHECK(fast == general);
  return fast_events;
}

// A logprob in one of the spellings servers use.
std::string logprob_text(std::mt19937_64& random) {
  static const char* spellings[] = {"-0.5", "-1.0452473", "-1e-3", "-0", "0", "-1E+2", "-0.0", "-12.375",
                                    "-9.999999999999999e-5", "-3.4028235e38", "-1e-320"};
  return spellings[random() % (sizeof spellings / sizeof spellings[0])];
}

// Token text of `length` bytes with escapes, a surrogate pair and raw UTF-8 in it.
std::string token_text(std::size_t length, std::mt19937_64& random) {
  static const char* pieces[] = {"a", " the", "\\n", "\\\"", "\\\\", "\\u00e9", "\\ud83d\\ude00", "\xc3\xa9", "/", "\\t"};
  std::string text;
  while (text.size() < length) text += pieces[random() % (sizeof pieces / sizeof pieces[0])];
  return text;
}

std::string chat_event(std::size_t tokens, std::size_t length, std::size_t top, std::mt19937_64& random) {
  std::string content;
  std::string entries;
  for (std::size_t t = 0; t < tokens; ++t) {
    const std::string text = token_text(length, random);
    content += text;
    std::string alternatives;
    for (std::size_t k = 0; k < top; ++k) {
      alternatives += std::string(k ? "," : "") + R"({"token":")" + (k ? token_text(1 + k, random) : text) +
                      R"(","logprob":)" + logprob_text(random) + R"(,"bytes":[97,)" + std::to_string(k) + "]}";
    }
    entries += std::string(t ? "," : "") + R"({"token":")" + text + R"(","logprob":)" + logprob_text(random) +
               R"(,"bytes":null,"top_logprobs":[)" + alternatives + "]}";
  }
  return R"({"id":"chatcmpl-1","object":"chat.completion.chunk","created":1796542049,"model":"m",)"
         R"("choices":[{"index":0,"delta":{"content":")" +
         content + R"("},"logprobs":{"content":[)" + entries + R"(]},"finish_reason":null}]})";
}

std::string completions_event(std::size_t tokens, std::size_t length, std::size_t top, std::mt19937_64& random) {
  std::string text, list, logprobs, tops, offsets;
  for (std::size_t t = 0; t < tokens; ++t) {
    const std::string token = token_text(length, random);
    const std::string sep = t ? "," : "";
    list += sep + "\"" + token + "\"";
    logprobs += sep + logprob_text(random);
    std::string object;
    for (std::size_t k = 0; k < top; ++k) {
      object += std::string(k ? "," : "") + "\"" + (k ? "alt" + std::to_string(k) : token) + "\":" + logprob_text(random);
    }
    tops += sep + "{" + object + "}";
    offsets += sep + std::to_string(t * length);
    text += token;
  }
  return R"({"id":"cmpl-1","object":"text_completion","created":1796542049,"model":"m","choices":[{"index":0,"text":")" +
         text + R"(","logprobs":{"tokens":[)" + list + R"(],"token_logprobs":[)" + logprobs + R"(],"top_logprobs":[)" +
         tops + R"(],"text_offset":[)" + offsets + R"(]},"finish_reason":null,"stop_reason":null}],)"
         R"("usage":{"prompt_tokens":7,"completion_tokens":)" + std::to_string(tokens) + "}}";
}

}  // namespace

TEST_CASE("Fast and general decoding agree on every event of the shape corpus") {
  std::size_t files = 0, fast_events = 0;
  std::vector<fs::path> all = testing::files_under(RETRACE_TEST_DATA);
  for (const fs::path& path : testing::files_under(RETRACE_SAMPLES)) all.push_back(path);
  const Dialect dialects[] = {Dialect::openai_completions, Dialect::openai_chat, Dialect::unknown,
                              Dialect::llamacpp_completion, Dialect::tgi_generate};
  for (const fs::path& path : all) {
    const std::string bytes = testing::read_path(path.string());
    ++files;
    for (Dialect dialect : dialects) {
      INFO(path.string() << " as " << to_string(dialect));
      fast_events += agree_on(dialect, bytes, true);
      fast_events += agree_on(dialect, bytes, false);
      // Each line alone, as one event's data and as one body (JSONL answers, whole JSON files).
      std::istringstream lines(bytes);
      for (std::string line; std::getline(lines, line);) {
        if (line.rfind("data: ", 0) == 0) line.erase(0, 6);
        fast_events += agree_on(dialect, line, false);
      }
    }
  }
  INFO(files << " files");
  CHECK(files >= 60);  // tests/data and the shared samples were found
  CHECK(fast_events > 1000);  // and the fast path read most of their events
}

TEST_CASE("Fast and general decoding agree on every input of the fuzz corpora") {
  // The corpora scripts/fuzz.sh grows (build/fuzz/corpus), or RETRACE_FUZZ_CORPUS's; the
  // repository's samples stand in for the decoder's seeds where neither is there.
  const char* chosen = std::getenv("RETRACE_FUZZ_CORPUS");
  const fs::path corpus = chosen ? fs::path(chosen) : fs::path(RETRACE_SOURCE_ROOT) / "build/fuzz/corpus";
  std::vector<fs::path> inputs;
  for (const char* target : {"decoder", "fast_event", "sse"}) {
    for (const fs::path& path : testing::files_under(corpus / target)) inputs.push_back(path);
  }
  if (inputs.empty()) {
    WARN("no fuzz corpus at " << corpus << ": the samples in tests/data stand in");
    inputs = testing::files_under(RETRACE_TEST_DATA);
  }
  std::size_t checked = 0;
  for (const fs::path& path : inputs) {
    const std::string bytes = testing::read_path(path.string());
    for (char first = 0; first < 32; ++first) {  // every dialect, streamed or not, wrapped or not
      std::string input = first + bytes.substr(bytes.empty() ? 0 : 1);
      INFO(path.string() << " first byte " << int(first));
      CHECK(fuzzing::decoders_agree(reinterpret_cast<const std::uint8_t*>(input.data()), input.size()));
      ++checked;
    }
  }
  CHECK(checked >= 32 * 50);
}

TEST_CASE("Fast and general decoding agree on generated events of growing size") {
  std::mt19937_64 random(44);
  for (const bool chat : {true, false}) {
    std::string stream;
    std::size_t events = 0;
    // Thousands of events: 1 to 128 tokens an event, 1 to 64 bytes a token, 0 to 5 alternatives.
    for (std::size_t tokens = 1; tokens <= 128; tokens *= 2) {
      for (std::size_t length = 1; length <= 64; length *= 4) {
        for (std::size_t top = 0; top <= 5; ++top) {
          for (int repeat = 0; repeat < 8; ++repeat) {
            const std::string data = chat ? chat_event(tokens, length, top, random)
                                          : completions_event(tokens, length, top, random);
            stream += "data: " + data + "\n\n";
            ++events;
          }
        }
      }
    }
    stream += "data: [DONE]\n\n";
    INFO((chat ? "chat" : "completions") << ", " << events << " events, " << stream.size() << " bytes");
    const std::size_t fast_events = agree_on(chat ? Dialect::openai_chat : Dialect::openai_completions, stream, true);
    CHECK(events == 1536);
    CHECK(fast_events == events);  // none of them was handed to the general path
  }
}

TEST_CASE("Fast and general decoding agree on malformed and edge values in every place") {
  // Each is put where a value goes in a simple event: the fast path must give up on what the
  // general parse refuses (which then notes it) and read the rest alike.
  const char* values[] = {"tru", "nul", "truex", "01", "1.", "-", "1e400", "-1e400", "1e-400", "-0", "-0.0",
                          "18446744073709551616", "9223372036854775808", "-9223372036854775808",
                          "-9223372036854775809", "[1,]", "{\"a\":1,}", "[1 2]", "\"\\x\"", "\"\\ud800\"",
                          "\"\\udc00\\ud800\"", "\"a\tb\"", "\"\xff\"", "\"\xc3\"", "\"\\u0000\"", "1E5", "0.1e",
                          "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
                          "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]"};
  const char* shapes[] = {
      R"({"choices":[{"index":0,"text":"a","finish_reason":null}],"x":@})",
      R"({"choices":[{"index":@,"text":"a"}]})",
      R"({"choices":[{"index":0,"text":@}]})",
      R"({"choices":[{"index":0,"delta":{"content":@}}]})",
      R"({"choices":[{"index":0,"text":"a","logprobs":{"tokens":["a"],"token_logprobs":[@],"top_logprobs":[{"a":@}]}}]})",
      R"({"choices":[{"index":0,"token_ids":[@]}],"usage":{"prompt_tokens":@,"completion_tokens":1}})",
      R"({"choices":[{"index":0,"text":"a"}]} @)",
  };
  std::size_t checked = 0;
  for (const char* shape : shapes) {
    for (const char* value : values) {
      std::string event(shape);
      for (auto at = event.find('@'); at != std::string::npos; at = event.find('@')) event.replace(at, 1, value);
      for (Dialect dialect : {Dialect::openai_completions, Dialect::openai_chat}) {
        INFO(event);
        agree_on(dialect, "data: " + event + "\n\n", true);
        agree_on(dialect, event, false);
        ++checked;
      }
    }
  }
  CHECK(checked == 2 * (sizeof shapes / sizeof shapes[0]) * (sizeof values / sizeof values[0]));
}

TEST_CASE("A legacy top_logprobs object past the fast path's label bound is read by the general path alike") {
  // Each new label is checked against the object's labels so far: past kMostFastLabels the fast
  // path gives the object up (a 100,000-label object would cost it its size squared) and the DOM
  // path reads it, with the same tokens and alternatives.
  for (std::size_t labels : {std::size_t(1), kMostFastLabels - 1, kMostFastLabels, kMostFastLabels + 1,
                             std::size_t(100000)}) {
    std::string top = "{";
    for (std::size_t i = 0; i < labels; ++i) top += (i ? ",\"t" : "\"t") + std::to_string(i) + "\":-1.5";
    top += "}";
    const std::string event = R"({"choices":[{"index":0,"text":"t0","logprobs":{"tokens":["t0"],)"
                              R"("token_logprobs":[-1.5],"top_logprobs":[)" + top + R"(],"text_offset":[0]},)"
                              R"("finish_reason":null}]})";
    INFO(labels << " labels");
    CHECK(agree_on(Dialect::openai_completions, "data: " + event + "\n\n", true) ==
          (labels <= kMostFastLabels ? 1u : 0u));
    CHECK(agree_on(Dialect::openai_completions, event, false) == (labels <= kMostFastLabels ? 1u : 0u));
  }
}
