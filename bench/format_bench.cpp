// format_bench: write and read N realistic exchanges as .rtrace and as JSONL+zstd (level 3), in
// the same run, and compare time and size.
//
//   build/<dir>/bench/format_bench [EXCHANGES=100000] [DIRECTORY=/tmp] [RTRACE_ZSTD_LEVEL=3]
//
// Each exchange: a chat request (system message + a 200-token user prompt, stream, logprobs,
// top_logprobs 3), a streamed response of 128 tokens with token ids, logprobs, 3 top
// alternatives and per-token arrival offsets, usage, labels. The raw SSE events are NOT included:
// they repeat the token stream byte for byte (recording keeps them; this measures the decoded
// form every stage reads). Both formats carry identical content; a content hash over what each
// reader returns proves it. Exchanges are generated one at a time from a seeded generator (no
// repetition zstd could exploit across exchanges); generation time is excluded from the timings.
#include <zstd.h>

#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>
#include <xxhash.h>

#include "format/json.hpp"
#include "format/trace.hpp"
#include "llm/derive_tokens.hpp"

using namespace retrace;
// Thread CPU time, not wall time: the machine these runs share is busy, and CPU time is what the
// format costs. (Wall time is printed too.)
struct Stopwatch {
  using duration = std::chrono::nanoseconds;
  using time_point = std::chrono::time_point<Stopwatch, duration>;
  static time_point now() {
    timespec now{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
    return time_point(duration(std::int64_t{now.tv_sec} * 1'000'000'000 + now.tv_nsec));
  }
};

namespace {

constexpr int kPromptTokens = 200;
constexpr int kOutputTokens = 128;
constexpr int kTop = 3;
constexpr int kVocabulary = 4000;

std::vector<std::string> make_vocabulary() {
  std::mt19937 random(42);
  const char* syllables[] = {"ka", "lo", "mi", "ren", "to", "sa", "vel", "qu", "an", "der",
                             "is", "on", "pra", "te", "ul", "ex", "bor", "ni", "ce", "ha"};
  std::vector<std::string> words;
  for (int i = 0; i < kVocabulary; ++i) {
    std::string word = " ";
    int parts = 1 + static_cast<int>(random() % 3);
    for (int p = 0; p < parts; ++p) word += syllables[random() % 20];
    words.push_back(word);
  }
  return words;
}

// Fills `exchange` (reusing its storage) with exchange number `n`.
void synthesize(std::uint64_t n, const std::vector<std::string>& words, Exchange& exchange) {
  std::mt19937_64 random(n * 7919 + 1);
  auto word_id = [&] { return static_cast<std::int32_t>(random() % kVocabulary); };
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  std::string prompt;
  for (int i = 0; i < kPromptTokens; ++i) prompt += words[word_id()];
  exchange.id = n;
  exchange.source_id = n;
  exchange.session_id = "session-" + std::to_string(n / 4);
  exchange.start_unix_ns = 1'750'000'000'000'000'000 + static_cast<std::int64_t>(n) * 13'000'000;
  exchange.intended_send_ns = static_cast<std::int64_t>(n) * 13'000'000;
  exchange.actual_send_ns = exchange.intended_send_ns + static_cast<std::int64_t>(random() % 200'000);
  exchange.request.method = "POST";
  exchange.request.target = "/v1/chat/completions";
  exchange.request.headers = {{"content-type", "application/json"}, {"user-agent", "bench/1.0"}};
  exchange.request.body =
      R"({"model":"llama-3-8b-instruct","messages":[{"role":"system","content":"You are a helpful assistant."},)"
      R"({"role":"user","content":")" + prompt +
      R"("}],"temperature":0,"max_tokens":128,"stream":true,"logprobs":true,"top_logprobs":3})";
  exchange.key = request_key(exchange.request.method, exchange.request.target, exchange.request.body);
  exchange.response.status = 200;
  exchange.response.headers = {{"content-type", "text/event-stream"}};
  exchange.response.body.clear();
  exchange.response.streamed = true;
  exchange.response.events.clear();
  exchange.choices.resize(1);
  Choice& choice = exchange.choices[0];
  choice.index = 0;
  choice.kind = TokenKind::token_ids;
  choice.finish_reason = "length";
  choice.tokens.resize(kOutputTokens);
  choice.alternatives.clear();
  std::int64_t offset = 20'000'000 + static_cast<std::int64_t>(random() % 5'000'000);
  exchange.first_byte_ns = offset;
  for (auto& token : choice.tokens) {
    token.id = word_id();
    token.bytes = words[token.id];
    token.has_logprob = true;
    // A peaked distribution: the chosen token is usually far ahead, sometimes a near tie.
    token.logprob = -unit(random) * unit(random) * 2.0f;
    token.offset_ns = offset;
    offset += 15'000'000 + static_cast<std::int64_t>(random() % 3'000'000);
    float logprob = token.logprob;
    token.top_count = 0;
    for (int a = 0; a < kTop; ++a) {
      Alternative& alternative = choice.add_alternative(token);
      alternative.id = a == 0 ? token.id : word_id();
      alternative.bytes = words[alternative.id];
      alternative.logprob = a == 0 ? logprob : logprob - 0.5f - unit(random) * 4.0f;
      logprob = alternative.logprob;
    }
  }
  exchange.end_ns = offset;
  exchange.usage = {kPromptTokens + 12, kOutputTokens, kPromptTokens + 12 + kOutputTokens};
  exchange.error = {};
  exchange.labels = {{"run", "bench"}, {"concurrency", "16"}};
  exchange.expected.reset();
  exchange.dialect = "openai-chat";
  exchange.decode_note.clear();
}

// A digest of what a reader returned, to prove both formats carry the same content.
struct ContentHash {
  XXH64_state_t* state = XXH64_createState();
  ContentHash() { XXH64_reset(state, 0); }
  ~ContentHash() { XXH64_freeState(state); }
  void add(const void* data, std::size_t size) { XXH64_update(state, data, size); }
  void add(const std::string& text) { add(text.data(), text.size()); }
  void add(const Exchange& exchange) {
    add(&exchange.id, sizeof exchange.id);
    add(exchange.request.body);
    add(&exchange.key, sizeof exchange.key);
    add(&exchange.end_ns, sizeof exchange.end_ns);
    for (const auto& choice : exchange.choices)
      for (const auto& token : choice.tokens) {
        add(&token.id, sizeof token.id);
        add(token.bytes);
        add(&token.logprob, sizeof token.logprob);
        add(&token.offset_ns, sizeof token.offset_ns);
        for (const auto& alternative : choice.top(token)) {
          add(&alternative.id, sizeof alternative.id);
          add(&alternative.logprob, sizeof alternative.logprob);
        }
      }
  }
  std::uint64_t digest() const { return XXH64_digest(state); }
};

struct Result {
  double write_s = 0;
  double read_s = 0;
  std::uint64_t bytes = 0;
  std::uint64_t read_count = 0;
  std::uint64_t digest = 0;
};

double seconds(Stopwatch::duration d) { return std::chrono::duration<double>(d).count(); }

Result bench_rtrace(const std::filesystem::path& path, std::uint64_t count,
                    const std::vector<std::string>& words, int level) {
  Result result;
  Exchange exchange;
  Stopwatch::duration writing{};
  {
    TraceHeader header;
    header.tool_version = "bench";
    header.source = Source::replayed;
    WriterOptions options;
    options.zstd_level = level;
    auto start = Stopwatch::now();
    TraceWriter writer(path, header, options);
    writing += Stopwatch::now() - start;
    for (std::uint64_t n = 0; n < count; ++n) {
      synthesize(n, words, exchange);
      start = Stopwatch::now();
      writer.write(exchange);
      writing += Stopwatch::now() - start;
    }
    start = Stopwatch::now();
    writer.close();
    writing += Stopwatch::now() - start;
  }
  result.write_s = seconds(writing);
  result.bytes = std::filesystem::file_size(path);

  ContentHash hash;
  Stopwatch::duration reading{};
  auto start = Stopwatch::now();
  TraceReader reader(path);
  while (reader.next(exchange)) {
    reading += Stopwatch::now() - start;
    hash.add(exchange);
    ++result.read_count;
    start = Stopwatch::now();
  }
  reading += Stopwatch::now() - start;
  result.read_s = seconds(reading);
  result.digest = hash.digest();
  return result;
}

Result bench_jsonl(const std::filesystem::path& path, std::uint64_t count,
                   const std::vector<std::string>& words) {
  Result result;
  Exchange exchange;
  Stopwatch::duration writing{};
  {
    auto start = Stopwatch::now();
    std::FILE* file = std::fopen(path.c_str(), "wb");
    if (!file) throw std::runtime_error("cannot create " + path.string());
    ZSTD_CCtx* compressor = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(compressor, ZSTD_c_compressionLevel, 3);
    std::vector<char> out(ZSTD_CStreamOutSize());
    auto feed = [&](const std::string& text, ZSTD_EndDirective mode) {
      ZSTD_inBuffer input{text.data(), text.size(), 0};
      for (;;) {
        ZSTD_outBuffer output{out.data(), out.size(), 0};
        std::size_t left = ZSTD_compressStream2(compressor, &output, &input, mode);
        if (ZSTD_isError(left)) throw std::runtime_error(ZSTD_getErrorName(left));
        std::fwrite(out.data(), 1, output.pos, file);
        if (mode == ZSTD_e_continue ? input.pos == input.size : left == 0) break;
      }
    };
    TraceHeader header;
    header.tool_version = "bench";
    header.source = Source::replayed;
    feed(header_line(header) + "\n", ZSTD_e_continue);
    writing += Stopwatch::now() - start;
    std::string line;
    for (std::uint64_t n = 0; n < count; ++n) {
      synthesize(n, words, exchange);
      start = Stopwatch::now();
      line = exchange_line(exchange);
      line += '\n';
      feed(line, ZSTD_e_continue);
      writing += Stopwatch::now() - start;
    }
    start = Stopwatch::now();
    feed(std::string(), ZSTD_e_end);
    ZSTD_freeCCtx(compressor);
    std::fclose(file);
    writing += Stopwatch::now() - start;
  }
  result.write_s = seconds(writing);
  result.bytes = std::filesystem::file_size(path);

  ContentHash hash;
  auto start = Stopwatch::now();
  {
    std::FILE* file = std::fopen(path.c_str(), "rb");
    ZSTD_DCtx* decompressor = ZSTD_createDCtx();
    std::vector<char> in(ZSTD_DStreamInSize());
    std::vector<char> out(ZSTD_DStreamOutSize());
    std::string pending;
    boost::json::parser parser;
    bool header_seen = false;
    auto take_line = [&](std::string_view line) {
      parser.reset();
      parser.write(line);
      boost::json::value value = parser.release();
      if (!header_seen) {
        header_seen = true;
        return;
      }
      exchange_from_json(value.as_object().at("exchange").as_object(), exchange);
      hash.add(exchange);
      ++result.read_count;
    };
    std::size_t got;
    while ((got = std::fread(in.data(), 1, in.size(), file)) > 0) {
      ZSTD_inBuffer input{in.data(), got, 0};
      while (input.pos < input.size) {
        ZSTD_outBuffer output{out.data(), out.size(), 0};
        std::size_t hint = ZSTD_decompressStream(decompressor, &output, &input);
        if (ZSTD_isError(hint)) throw std::runtime_error(ZSTD_getErrorName(hint));
        pending.append(out.data(), output.pos);
        std::size_t begin = 0, newline;
        while ((newline = pending.find('\n', begin)) != std::string::npos) {
          take_line(std::string_view(pending).substr(begin, newline - begin));
          begin = newline + 1;
        }
        pending.erase(0, begin);
      }
    }
    ZSTD_freeDCtx(decompressor);
    std::fclose(file);
  }
  result.read_s = seconds(Stopwatch::now() - start);
  result.digest = hash.digest();
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  retrace::llm::install_token_deriver();  // format 1.7 (format/token_deriver.hpp)
  std::uint64_t count = argc > 1 ? std::stoull(argv[1]) : 100'000;
  std::filesystem::path directory = argc > 2 ? argv[2] : std::filesystem::temp_directory_path();
  int level = argc > 3 ? std::stoi(argv[3]) : 3;
  auto words = make_vocabulary();
  auto rtrace_path = directory / "format_bench.rtrace";
  auto jsonl_path = directory / "format_bench.jsonl.zst";

  std::fprintf(stderr, "format_bench: %llu exchanges (%d prompt tokens, %d output tokens, top %d)\n",
               static_cast<unsigned long long>(count), kPromptTokens, kOutputTokens, kTop);
  auto wall = std::chrono::steady_clock::now();
  Result rtrace = bench_rtrace(rtrace_path, count, words, level);
  double rtrace_wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall).count();
  wall = std::chrono::steady_clock::now();
  Result jsonl = bench_jsonl(jsonl_path, count, words);
  double jsonl_wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall).count();
  std::filesystem::remove(rtrace_path);
  std::filesystem::remove(jsonl_path);

  std::printf("(CPU seconds; wall time incl. synthesis: rtrace %.1f s, jsonl %.1f s)\n", rtrace_wall,
              jsonl_wall);
  std::printf("%-14s %10s %10s %12s\n", "format", "write s", "read s", "bytes");
  std::printf("%-14s %10.2f %10.2f %12llu\n", ".rtrace", rtrace.write_s, rtrace.read_s,
              static_cast<unsigned long long>(rtrace.bytes));
  std::printf("%-14s %10.2f %10.2f %12llu\n", "jsonl+zstd3", jsonl.write_s, jsonl.read_s,
              static_cast<unsigned long long>(jsonl.bytes));
  std::printf("rtrace/jsonl: size %.3f, write %.1fx faster, read %.1fx faster\n",
              double(rtrace.bytes) / jsonl.bytes, jsonl.write_s / rtrace.write_s,
              jsonl.read_s / rtrace.read_s);
  bool same = rtrace.digest == jsonl.digest && rtrace.read_count == count &&
              jsonl.read_count == count;
  std::printf("content: %s (%llu exchanges read from each)\n",
              same ? "identical" : "DIFFERENT", static_cast<unsigned long long>(count));
  return same ? 0 : 1;
}
