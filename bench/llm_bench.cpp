// Throughput of the llm/ hot path: SSE framing and response decoding, as the recorder and the
// replayer run it for every streamed event. Synthetic streams shaped like real servers' output.
//
//   build/<dir>/bench/llm_bench [exchanges] [ROW]   (default 400 exchanges of 512 events each;
//                                                    ROW: only the rows whose name contains it)
//
// Rates are per second of the process's CPU time. Prints, per stream shape: MB/s and events/s
// through SseParser alone, and tokens/s through
// SseParser + ResponseDecoder, fed in 1500-byte network-sized chunks. "(DOM)" rows decode every
// event through the decoder's general path, as before its SAX fast path for simple events.
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>

#include "llm/derive_tokens.hpp"
#include "llm/llm.hpp"

using namespace retrace;
using namespace retrace::llm;

namespace {

// The process's CPU time, not wall time: on a shared machine, time spent preempted by other jobs
// would otherwise count as this benchmark's (the benchmark is single-threaded).
struct Clock {
  using time_point = double;
  static time_point now() {
    timespec now{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
    return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) / 1e9;
  }
};

double seconds_since(Clock::time_point start) { return Clock::now() - start; }

std::string text_delta_stream(std::size_t events) {
  std::string stream;
  for (std::size_t i = 0; i < events; ++i) {
    stream += R"(data: {"id":"cmpl-1","object":"text_completion","created":1764400000,"model":"m","choices":[{"index":0,"text":" word)";
    stream += std::to_string(i % 1000);
    stream += R"(","logprobs":null,"finish_reason":null,"stop_reason":null}],"usage":null})";
    stream += "\n\n";
  }
  stream += "data: [DONE]\n\n";
  return stream;
}

std::string token_id_stream(std::size_t events) {
  std::string stream;
  for (std::size_t i = 0; i < events; ++i) {
    const std::string id = std::to_string(1000 + i % 30000);
    stream += R"(data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1764400000,"model":"m","choices":[{"index":0,"delta":{"content":" word"},"logprobs":{"content":[{"token":"token_id:)";
    stream += id + R"(","logprob":-0.25,"bytes":[116,111,107,101,110],"top_logprobs":[{"token":"token_id:)" + id +
              R"(","logprob":-0.25,"bytes":[116]},{"token":"token_id:7","logprob":-1.5,"bytes":[116]}]}]},"finish_reason":null,"token_ids":[)" +
              id + "]}]}\r\n\r\n";
  }
  stream += "data: [DONE]\r\n\r\n";
  return stream;
}

// retrace serve's streamed completions with logprobs 3 (legacy shape), as replay asks for them.
std::string legacy_logprobs_stream(std::size_t events) {
  std::string stream;
  for (std::size_t i = 0; i < events; ++i) {
    const std::string word = " word" + std::to_string(i % 1000);
    stream += R"(data: {"id":"cmpl-1","object":"text_completion","created":1764400000,"model":"retrace-sim","choices":[{"index":0,"text":")" +
              word + R"(","logprobs":{"tokens":[")" + word + R"("],"token_logprobs":[-0.4123],"top_logprobs":[{")" + word +
              R"(":-0.4123," the":-1.8311," a":-2.0172}],"text_offset":[)" + std::to_string(i * 8) +
              R"(]},"finish_reason":null}]})" "\n\n";
  }
  stream += "data: [DONE]\n\n";
  return stream;
}

// retrace serve's event as replay (b) (bench/replay_ab.sh) reads it: completions, logprobs 2, each
// logprob a float's shortest spelling, as serve prints them.
std::string serve_logprobs_stream(std::size_t events) {
  const auto shortest = [](float value) {
    char text[32];
    return std::string(text, std::to_chars(text, text + sizeof text, value).ptr);
  };
  std::string stream;
  std::size_t offset = 0;
  for (std::size_t i = 0; i < events; ++i) {
    const std::string word = " word" + std::to_string(i % 1000), other = i % 3 ? " the" : ",";
    const std::string logprob = shortest(-0.0137f * static_cast<float>(i % 997) - 0.011f);
    const std::string second = shortest(-0.71f - 0.00731f * static_cast<float>(i % 613));
    stream += R"(data: {"id":"cmpl-6c1595b118ce5fccdb901af3fc845879","object":"text_completion","created":1796592732,"model":"retrace-sim","system_fingerprint":"fp_retrace_sim_0","choices":[{"index":0,"text":")" +
              word + R"(","logprobs":{"tokens":[")" + word + R"("],"token_logprobs":[)" + logprob +
              R"(],"top_logprobs":[{")" + word + R"(":)" + logprob + R"(,")" + other + R"(":)" + second +
              R"(}],"text_offset":[)" + std::to_string(offset) +
              R"(]},"finish_reason":null,"stop_reason":null}]})" "\n\n";
    offset += word.size();
  }
  stream += "data: [DONE]\n\n";
  return stream;
}

// Chat chunks with logprobs (OpenAI's shape: token, logprob, bytes, top_logprobs), no ids.
std::string chat_logprobs_stream(std::size_t events) {
  std::string stream;
  for (std::size_t i = 0; i < events; ++i) {
    stream += R"(data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1764400000,"model":"m","choices":[{"index":0,"delta":{"content":" word"},"logprobs":{"content":[{"token":" word","logprob":-0.25,"bytes":[32,119,111,114,100],"top_logprobs":[{"token":" word","logprob":-0.25,"bytes":[32,119,111,114,100]},{"token":" the","logprob":-1.5,"bytes":[32,116,104,101]}]}],"refusal":null},"finish_reason":null}]})" "\n\n";
  }
  stream += "data: [DONE]\n\n";
  return stream;
}

// `stream` is one exchange's response; it is decoded `repeats` times, a fresh decoder each, as
// the recorder does per exchange.
// `fast_path` false decodes every event through the general (DOM) parse, for comparison.
const char* only = nullptr;  // ROW

void run(const char* name, const std::string& stream, Dialect dialect, std::size_t repeats,
         bool fast_path = true) {
  if (only && !std::strstr(name, only)) return;
  constexpr std::size_t kChunk = 1500;
  std::size_t events = 0;
  auto start = Clock::now();
  for (std::size_t r = 0; r < repeats; ++r) {
    SseParser parser;
    for (std::size_t at = 0; at < stream.size(); at += kChunk) {
      parser.feed(std::string_view(stream).substr(at, kChunk), [&](const SseEvent&) { ++events; });
    }
  }
  const double parse_seconds = seconds_since(start);

  start = Clock::now();
  std::size_t tokens = 0;
  for (std::size_t r = 0; r < repeats; ++r) {
    SseParser parser;
    ResponseDecoder decoder(dialect, fast_path);
    for (std::size_t at = 0; at < stream.size(); at += kChunk) {
      parser.feed(std::string_view(stream).substr(at, kChunk),
                  [&](const SseEvent& event) { decoder.on_event(event.data, static_cast<std::int64_t>(at)); });
    }
    Exchange exchange;
    decoder.finish(exchange);
    for (const Choice& choice : exchange.choices) tokens += choice.tokens.size();
  }
  const double decode_seconds = seconds_since(start);
  const double megabytes = static_cast<double>(stream.size()) * repeats / 1e6;
  std::printf("%-20s %7.1f MB  sse %5.0f MB/s %9.0f events/s   sse+decode %9.0f tokens/s %5.0f MB/s\n", name,
              megabytes, megabytes / parse_seconds, events / parse_seconds, tokens / decode_seconds,
              megabytes / decode_seconds);
}

// One huge event in small chunks: the parser must stay linear (each byte scanned once).
void run_large_event(std::size_t megabytes) {
  const std::string stream = "data: " + std::string(megabytes << 20, 'x') + "\n\n";
  const auto start = Clock::now();
  SseParser parser;
  std::size_t size = 0;
  for (std::size_t at = 0; at < stream.size(); at += 1024) {
    parser.feed(std::string_view(stream).substr(at, 1024), [&](const SseEvent& event) { size = event.data.size(); });
  }
  const double seconds = seconds_since(start);
  std::printf("one %zu MB event in 1 KiB feeds: %.3f s (%.0f MB/s), data %zu bytes\n", megabytes, seconds,
              stream.size() / 1e6 / seconds, size);
}

}  // namespace

int main(int argc, char** argv) {
  retrace::llm::install_token_deriver();  // format 1.7 (format/token_deriver.hpp)
  const std::size_t repeats = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 400;
  if (argc > 2) only = argv[2];
  constexpr std::size_t kEventsPerExchange = 512;
  const std::string text_deltas = text_delta_stream(kEventsPerExchange);
  run("text deltas", text_deltas, Dialect::openai_completions, repeats);
  run("text deltas (DOM)", text_deltas, Dialect::openai_completions, repeats, false);
  run("token ids", token_id_stream(kEventsPerExchange), Dialect::openai_chat, repeats);
  const std::string legacy = legacy_logprobs_stream(kEventsPerExchange);
  run("legacy logprobs", legacy, Dialect::openai_completions, repeats);
  run("legacy logprobs (DOM)", legacy, Dialect::openai_completions, repeats, false);
  run("serve logprobs", serve_logprobs_stream(kEventsPerExchange), Dialect::openai_completions, repeats);
  const std::string chat = chat_logprobs_stream(kEventsPerExchange);
  run("chat logprobs", chat, Dialect::openai_chat, repeats);
  run("chat logprobs (DOM)", chat, Dialect::openai_chat, repeats, false);
  if (!only) run_large_event(64);
}
