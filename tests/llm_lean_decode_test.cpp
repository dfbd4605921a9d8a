// A decode without alternatives (format/trace.hpp's DecodeWants, kNoAlternatives: what stats, diff's
// outputs and a table's rows ask of a derived trace) must be the full decode with the alternatives
// removed, field by field (tokens, ids, bytes, logprobs, offsets, kinds, finish reasons, parts,
// usage, notes, errors) and take the fast path on the same events, on: every event of the shape
// corpus (tests/data and the shared samples), as a stream, a body and line by line, in every
// dialect; the fuzz corpora (or the samples where none was grown), also wrapped as a choice's
// logprobs; generated streams of 0 to 16,384 tokens with 0 to 5 alternatives in both OpenAI shapes
// (a token without a logprob that takes its alternative's, ids spelled "token_id:N"); and the trace
// readers that ask for it. And a decode without logprob values either (kNoLogprobValues: replay's
// and record's live decode with --derive-tokens) is the full decode without alternatives and with
// every logprob 0, on all of the above and on logprobs objects of bad numbers, duplicate keys and
// huge alternatives lists, the fast path taking exactly the same events.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "format/exchange_rows.hpp"
#include "format/trace.hpp"
#include "llm/derive_tokens.hpp"
#include "llm/llm.hpp"
#include "tests/temp_dir.hpp"
#include "tests/test_data.hpp"

using namespace retrace;
using namespace retrace::llm;
namespace fs = std::filesystem;

namespace {

// The full decode's result as the lean one must be: no alternatives, every token spelled as one
// without any.
Exchange without_alternatives(Exchange exchange) {
  for (Choice& choice : exchange.choices) {
    for (Token& token : choice.tokens) token.top_begin = token.top_count = 0;
    choice.alternatives.clear();
  }
  return exchange;
}
// And without logprob values.
Exchange without_values(Exchange exchange) {
  exchange = without_alternatives(std::move(exchange));
  for (Choice& choice : exchange.choices)
    for (Token& token : choice.tokens) token.logprob = 0;
  return exchange;
}

struct Decoded {
  Exchange exchange;
  std::size_t fast_events = 0;
  std::vector<ToolCallId> tool_call_ids;
};

// `decoder` (reset to `dialect` and `wants`) fed `bytes` as a stream (feed_sse) or one body, then
// finished as a 200 response.
Decoded decode(ResponseDecoder& decoder, Dialect dialect, DecodeWants wants, std::string_view bytes, bool streamed) {
  decoder.reset(dialect, wants);
  if (streamed) {
    SseParser parser;
    feed_sse(parser, bytes, 1000, &decoder, nullptr);
  } else {
    decoder.on_body(bytes, 1000);
  }
  Decoded out;
  out.exchange.response.status = 200;
  out.exchange.response.streamed = streamed;
  decoder.finish(out.exchange);
  out.fast_events = decoder.fast_path_events();
  out.tool_call_ids = decoder.tool_call_ids();
  return out;
}

struct Tally {
  std::size_t decodes = 0, alternatives = 0, fast_events = 0, tokens = 0;
};

// Full and lean alike on `bytes`, the fast path on and off; one decoder each way, reused (reset)
// as the deriver reuses its own, so that a lean decode after a full one (and back) is covered too.
void lean_matches_full(Dialect dialect, std::string_view bytes, bool streamed, Tally& tally) {
  static ResponseDecoder fast_decoder(Dialect::unknown, true), general_decoder(Dialect::unknown, false);
  for (ResponseDecoder* decoder : {&fast_decoder, &general_decoder}) {
    const Decoded full = decode(*decoder, dialect, DecodeWants{}, bytes, streamed);
    const Decoded lean = decode(*decoder, dialect, kNoAlternatives, bytes, streamed);
    CHECK(lean.exchange == without_alternatives(full.exchange));
    CHECK(lean.fast_events == full.fast_events);
    const Decoded counts = decode(*decoder, dialect, kNoLogprobValues, bytes, streamed);
    CHECK(counts.exchange == without_values(full.exchange));
    CHECK(counts.fast_events == full.fast_events);
    REQUIRE(lean.tool_call_ids.size() == full.tool_call_ids.size());
    for (std::size_t i = 0; i < full.tool_call_ids.size(); ++i) {
      const ToolCallId &a = lean.tool_call_ids[i], &b = full.tool_call_ids[i];
      CHECK((a.index == b.index && a.call == b.call && a.id == b.id));
    }
    ++tally.decodes;
    tally.fast_events += full.fast_events;
    for (const Choice& choice : full.exchange.choices) {
      tally.alternatives += choice.alternatives.size();
      tally.tokens += choice.tokens.size();
    }
  }
}

std::vector<fs::path> files_under(const fs::path& root) {
  std::vector<fs::path> files;
  if (!fs::is_directory(root)) return files;
  for (const auto& entry : fs::recursive_directory_iterator(root))
    if (entry.is_regular_file()) files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

constexpr Dialect kDialects[] = {Dialect::unknown,          Dialect::openai_completions, Dialect::openai_chat,
                                 Dialect::llamacpp_completion, Dialect::tgi_generate,    Dialect::openai_responses,
                                 Dialect::anthropic_messages, Dialect::openai_embeddings};

// `bytes` as a stream, as a body, and each line as one body, in every dialect.
void every_reading(std::string_view bytes, Tally& tally) {
  for (Dialect dialect : kDialects) {
    INFO("as " << to_string(dialect));
    lean_matches_full(dialect, bytes, true, tally);
    lean_matches_full(dialect, bytes, false, tally);
    std::istringstream lines{std::string(bytes)};
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("data: ", 0) == 0) line.erase(0, 6);
      lean_matches_full(dialect, line, false, tally);
    }
  }
}

// A token's text, with an escape or raw UTF-8 now and then.
std::string token_text(std::mt19937_64& random) {
  static const char* pieces[] = {"a", " the", "\\n", "\\\"", "\\u00e9", "\xc3\xa9", " sea", "\\ud83d\\ude00"};
  return std::string(pieces[random() % 8]) + pieces[random() % 8];
}

// One event a token (as servers stream), `top` alternatives each: the first is the token itself
// (its bytes, or its id spelled "token_id:N"), one token in ten has no logprob of its own.
std::string generated_stream(bool chat, std::size_t tokens, std::size_t top, std::mt19937_64& random) {
  std::string stream;
  for (std::size_t t = 0; t < tokens; ++t) {
    const std::string text = token_text(random);
    const std::string logprob = random() % 10 == 0 ? "null" : "-0." + std::to_string(random() % 1000);
    std::string alternatives;
    for (std::size_t k = 0; k < top; ++k) {
      const std::string alternative = k == 0 ? (random() % 4 == 0 ? "token_id:" + std::to_string(t) : text)
                                             : "alt" + std::to_string(k) + token_text(random);
      const std::string value = "-" + std::to_string(k + 1) + "." + std::to_string(random() % 100);
      if (chat) {
        alternatives += std::string(k ? "," : "") + R"({"token":")" + alternative + R"(","logprob":)" + value +
                        (random() % 3 == 0 ? R"(,"id":)" + std::to_string(k) : "") + "}";
      } else {
        alternatives += std::string(k ? "," : "") + "\"" + alternative + "\":" + value;
      }
    }
    const bool last = t + 1 == tokens;
    const std::string finish = last ? R"("length")" : "null";
    if (chat) {
      stream += R"(data: {"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":")" +
                text + R"("},"logprobs":{"content":[{"token":")" + text + R"(","logprob":)" + logprob +
                R"(,"top_logprobs":[)" + alternatives + R"(]}]},"finish_reason":)" + finish + "}]}\n\n";
    } else {
      stream += R"(data: {"id":"c","object":"text_completion","model":"m","choices":[{"index":0,"text":")" + text +
                R"(","logprobs":{"tokens":[")" + text + R"("],"token_logprobs":[)" + logprob + R"(],"top_logprobs":[{)" +
                alternatives + R"(}],"text_offset":[)" + std::to_string(t) + R"(]},"finish_reason":)" + finish +
                "}]}\n\n";
    }
  }
  stream += R"(data: {"id":"c","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":)" +
            std::to_string(tokens) + "}}\n\ndata: [DONE]\n\n";
  return stream;
}

}  // namespace

TEST_CASE("A decode without alternatives is the full decode without them on the shape corpus") {
  Tally tally;
  std::size_t files = 0;
  std::vector<fs::path> all = files_under(RETRACE_TEST_DATA);
  for (const fs::path& path : files_under(RETRACE_SAMPLES)) all.push_back(path);
  for (const fs::path& path : all) {
    INFO(path.string());
    every_reading(testing::read_path(path.string()), tally);
    ++files;
  }
  INFO(files << " files, " << tally.decodes << " decodes");
  CHECK(files >= 60);
  CHECK(tally.fast_events > 1000);
  CHECK(tally.alternatives > 1000);  // the full decodes had alternatives to leave out
}

TEST_CASE("A decode without alternatives is the full decode without them on the fuzz corpora") {
  // The corpora scripts/fuzz.sh grows (build/fuzz/corpus), or RETRACE_FUZZ_CORPUS's; the samples
  // stand in where neither is there. Each input also wrapped as a choice's logprobs value, where
  // the fast path's alternatives are read.
  const char* chosen = std::getenv("RETRACE_FUZZ_CORPUS");
  const fs::path corpus = chosen ? fs::path(chosen) : fs::path(RETRACE_SOURCE_ROOT) / "build/fuzz/corpus";
  std::vector<fs::path> inputs;
  for (const char* target : {"decoder", "fast_event", "sse"})
    for (const fs::path& path : files_under(corpus / target)) inputs.push_back(path);
  if (inputs.empty()) {
    WARN("no fuzz corpus at " << corpus << ": the samples in tests/data stand in");
    inputs = files_under(RETRACE_TEST_DATA);
  }
  Tally tally;
  for (const fs::path& path : inputs) {
    INFO(path.string());
    const std::string bytes = testing::read_path(path.string());
    every_reading(bytes, tally);
    std::istringstream lines(bytes);
    std::string chat, completions;
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("data: ", 0) == 0) line.erase(0, 6);
      chat += R"(data: {"choices":[{"index":0,"delta":{"content":"a\u00e9b"},"logprobs":)" + line + "}]}\n\n";
      completions += R"(data: {"choices":[{"index":0,"text":"a\u00e9b","logprobs":)" + line + "}]}\n\n";
    }
    lean_matches_full(Dialect::openai_chat, chat, true, tally);
    lean_matches_full(Dialect::openai_completions, completions, true, tally);
  }
  CHECK(inputs.size() >= 50);
  CHECK(tally.decodes > 1000);
}

TEST_CASE("A decode without alternatives is the full decode without them on generated streams of up to 16384 tokens") {
  std::mt19937_64 random(44);
  Tally tally;
  for (const bool chat : {true, false}) {
    for (const std::size_t tokens : {0, 1, 2, 7, 100, 1000, 16384}) {
      for (std::size_t top = 0; top <= 5; ++top) {
        if (tokens == 16384 && top % 2 == 1) continue;  // 0, 2 and 4 at the largest size
        INFO((chat ? "chat" : "completions") << ", " << tokens << " tokens, " << top << " alternatives");
        const std::string stream = generated_stream(chat, tokens, top, random);
        const Tally before = tally;
        lean_matches_full(chat ? Dialect::openai_chat : Dialect::openai_completions, stream, true, tally);
        CHECK(tally.tokens - before.tokens == 2 * tokens);
        CHECK(tally.alternatives - before.alternatives == 2 * tokens * top);
        CHECK(tally.fast_events - before.fast_events == tokens + 1);  // the fast path took every event
      }
    }
  }
}

TEST_CASE("Trace readers that show no alternatives derive none and read the rest as the full read does") {
  // A derived trace (format 1.7) of one long chat stream with two alternatives a token.
  std::mt19937_64 random(7);
  const std::string body = generated_stream(true, 3000, 2, random);
  Exchange exchange;
  exchange.request.method = "POST";
  exchange.request.target = "/v1/chat/completions";
  exchange.response.status = 200;
  exchange.response.streamed = true;
  SseParser parser;
  feed_sse(parser, body, 1000, nullptr, &exchange.response.events);
  Events timed;  // one event a microsecond
  for (std::size_t i = 0; i < exchange.response.events.size(); ++i)
    timed.push_back(static_cast<std::int64_t>(1000 * i), exchange.response.events[i].data);
  exchange.response.events = std::move(timed);
  decode_exchange(exchange);  // the events' tokens, as the live loop makes them
  REQUIRE(exchange.choices.at(0).alternatives.size() == 6000);
  TempDir dir;
  {
    WriterOptions options;
    options.derive_tokens = true;
    TraceWriter writer(dir / "t.rtrace", TraceHeader{}, options);
    writer.write(exchange);
    writer.close();
  }
  install_token_deriver();
  Exchange full, lean, row;
  ExchangeOutputs outputs, stored_outputs;
  TraceReader full_reader(dir / "t.rtrace");
  REQUIRE(full_reader.next(full));
  CHECK(full == exchange);  // the full read derives every alternative back
  TraceReader lean_reader(dir / "t.rtrace", ReaderOptions{.derived = kNoAlternatives});
  REQUIRE(lean_reader.next(lean));
  CHECK(lean == without_alternatives(exchange));
  RowReader rows(dir / "t.rtrace");
  REQUIRE(rows.next(row));
  CHECK(row.choices.at(0).alternatives.empty());
  CHECK(row.choices.at(0).tokens.size() == 3000);
  TraceReader outputs_reader(dir / "t.rtrace");
  REQUIRE(outputs_reader.next(outputs));
  outputs_of(exchange, stored_outputs);
  CHECK(outputs == stored_outputs);
  Exchange last;
  outputs_reader.read_last(last);
  CHECK(last == exchange);  // diff's whole read after its outputs: alternatives and all
}

TEST_CASE("A decode without logprob values is the full decode without them on bad numbers duplicate keys and huge lists") {
  // Numbers the fast path's lexer refuses (it then leaves the event to the parser) and ones it
  // takes, in each place a logprob value goes; duplicate keys; more labels than the fast path reads.
  const std::vector<std::string> numbers = {
      "-0.5", "0", "-0", "1", "-12345678901234.5", "-1234567890123456", "-1234567890123456.5", "01", "-01.5",
      "1.", "-.5", "-", "1e", "1e+", "1E5", "-2.5e-3", "1e1234", "1e12345", "-9.99999999999999999999e-300",
      "1.5e400", "-0.4350352300000000000000000000000000001", "1x", "\"-1\"", "true", "null", "[]", "{}"};
  std::vector<std::string> events;
  for (const std::string& number : numbers) {
    events.push_back(R"({"choices":[{"index":0,"text":"a","logprobs":{"tokens":["a"],"token_logprobs":[)" + number +
                     R"(],"top_logprobs":[{"a":)" + number + R"(,"b":-1}]}}]})");
    events.push_back(R"({"choices":[{"index":0,"text":"a","logprobs":{"tokens":["a"],"token_logprobs":[-1],"top_logprobs":[{"a":-1,"b":)" +
                     number + R"(}]}}]})");
    events.push_back(R"({"choices":[{"index":0,"delta":{"content":"a"},"logprobs":{"content":[{"token":"a","logprob":)" +
                     number + R"(,"top_logprobs":[{"token":"a","logprob":)" + number + R"(}]}]}}]})");
    events.push_back(R"({"choices":[{"index":0,"delta":{"content":"a"},"logprobs":{"content":[{"token":"a","top_logprobs":[{"token":"a","logprob":)" +
                     number + R"(}]}]}}]})");  // the token's logprob is its alternative's
  }
  for (const char* duplicate :
       {R"({"choices":[{"index":0,"text":"a","logprobs":{"tokens":["a"],"token_logprobs":[-1],"token_logprobs":[-2]}}]})",
        R"({"choices":[{"index":0,"text":"a","logprobs":{"tokens":["a"],"token_logprobs":[-1],"top_logprobs":[{"a":-1,"a":-2}]}}]})",
        R"({"choices":[{"index":0,"delta":{"content":"a"},"logprobs":{"content":[{"token":"a","logprob":-1,"logprob":-2}]}}]})",
        R"({"choices":[{"index":0,"delta":{"content":"a"},"logprobs":{"content":[{"token":"a","logprob":-1,"top_logprobs":[{"token":"a","logprob":-1,"logprob":-3}]}]}}]})"})
    events.push_back(duplicate);
  for (std::size_t labels : {255, 256, 257, 5000}) {  // past kMostFastLabels the parser reads them
    std::string top;
    for (std::size_t k = 0; k < labels; ++k) top += (k ? ",\"" : "\"") + std::to_string(k) + "\":-" + std::to_string(k) + ".25";
    events.push_back(R"({"choices":[{"index":0,"text":"a","logprobs":{"tokens":["a"],"token_logprobs":[-1],"top_logprobs":[{)" + top + "}]}}]}");
  }
  Tally tally;
  for (const std::string& event : events) {
    INFO(event.substr(0, 300));
    const Dialect dialect = event.find("delta") != std::string::npos ? Dialect::openai_chat : Dialect::openai_completions;
    // Alone, and after events of the repeated shape (the fast path's warm state and prefix).
    lean_matches_full(dialect, "data: " + event + "\n\n", true, tally);
    lean_matches_full(dialect, "data: " + event + "\n\ndata: " + event + "\n\ndata: " + event + "\n\n", true, tally);
  }
  CHECK(tally.fast_events > 100);
}
