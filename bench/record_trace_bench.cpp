// record's trace thread alone, on one core: each exchange of a recorded trace made back into what a
// proxy worker captures (its events' bytes as the body, one read per event), then finish_exchange
// and the trace writer at record's zstd level, as TraceSink::run does. Prints the thread's CPU
// time per token, the best of ROUNDS passes (the least disturbed by other processes: this
// machine is shared), and the size of the trace it wrote. Each round runs twice, alternated: the
// writer with WriterOptions::derive_tokens (record --derive-tokens: streamed tokens derived,
// format/token_deriver.hpp) and without (the default: every token stored, as 1.6 did), each with
// its bytes before and after zstd; the first line printed is the default's (bench/lib.sh's
// storing_us_per_token reads it). Derived twice: the writer verifying each exchange by decoding its
// events again (as before TokensFromEvents), and taking finish_exchange's word as record does; and
// last, the word taken with the live decode lean (kNoLogprobValues), as TraceSink::run decodes.
//
// Usage: record_trace_bench RECORDED.rtrace [ROUNDS]
//   e.g. on the trace bench/record.sh keeps (recorded.rtrace in its OUT_DIR's work folder) or on
//   any trace `retrace record` wrote of streamed completions.
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "format/token_deriver.hpp"
#include "bench/thread_cpu.hpp"
#include "bench/token_trace.hpp"
#include "format/trace.hpp"
#include "record/record.hpp"
#include "llm/derive_tokens.hpp"

using namespace retrace;

namespace {

record::CapturedExchange as_captured(const Exchange& recorded) {
  record::CapturedExchange captured;
  captured.exchange = recorded;
  captured.exchange.response.events.clear();
  captured.exchange.response.body.clear();
  captured.exchange.choices.clear();
  captured.exchange.usage = Usage{};
  captured.exchange.decode_note.clear();
  captured.event_stream = recorded.response.streamed;
  if (recorded.response.streamed) {
    for (const auto& event : recorded.response.events) captured.body.append(event.data, event.offset_ns);
  } else {
    captured.body.assign_unmarked(recorded.response.body);
  }
  return captured;
}

}  // namespace

int main(int argc, char** argv) {
  auto [trace, tokens, rounds] = bench::load_token_trace(argc, argv, "record_trace_bench RECORDED.rtrace [ROUNDS]");
  // One file a process: two benches at once in one $TMPDIR must not write over each other.
  auto out = std::filesystem::temp_directory_path() /
             ("record_trace_bench-" + std::to_string(::getpid()) + ".rtrace");
  WriterOptions options;
  options.zstd_level = 1;  // record's level
  struct Mode {
    const char* name;
    bool derive;
    bool word = true;  // TokensFromEvents said where finish_exchange says so, as TraceSink::run does
    DecodeWants live = {};  // what finish_exchange is asked to keep (TraceSink::run: kNoLogprobValues)
    double best = 1e30;
    std::uint64_t written_tokens = 0, compressed = 0, decompressed = 0;
  };
  Mode modes[] = {{"tokens stored (the default)", false},
                  {"tokens derived (--derive-tokens), each exchange's events decoded again to verify", true, false},
                  {"tokens derived (--derive-tokens), finish_exchange's word taken, full live decode", true, true},
                  {"tokens derived (--derive-tokens), finish_exchange's word taken, no logprob values (TraceSink::run)",
                   true, true, kNoLogprobValues}};
  for (int round = 0; round < rounds; ++round) {
    for (Mode& mode : modes) {
      options.derive_tokens = mode.derive;
      std::vector<record::CapturedExchange> captured;
      captured.reserve(trace.exchanges.size());
      for (const auto& exchange : trace.exchanges) captured.push_back(as_captured(exchange));
      Redactor redactor(false, {});
      TraceWriter writer(out, trace.header, options);
      Exchange finished;
      mode.written_tokens = 0;
      double start = bench::thread_cpu_seconds();
      std::uint64_t id = 0;
      for (auto& one : captured) {
        DecodeWants live = mode.live;
        const bool from_events = record::finish_exchange(std::move(one), redactor, id++, finished, kMaxBlobBytes, &live);
        write_with_word(writer, finished, from_events && mode.word, live);
        for (const auto& choice : finished.choices) mode.written_tokens += choice.tokens.size();
      }
      writer.close();
      captured.clear();  // freed inside the measurement, as the trace thread frees each one
      mode.best = std::min(mode.best, bench::thread_cpu_seconds() - start);
      mode.compressed = std::filesystem::file_size(out);
      TraceReader reader(out);
      for (Exchange read; reader.next(read);) {
      }
      mode.decompressed = reader.decompressed_bytes();
    }
  }
  std::filesystem::remove(out);
  for (const Mode& mode : modes)
    std::printf("%zu exchanges, %llu tokens (%llu written): %.3f us/token of trace-thread CPU, best of %d; "
                "trace %llu bytes, %llu before compression (%.1f a token): %s\n",
                trace.exchanges.size(), static_cast<unsigned long long>(tokens),
                static_cast<unsigned long long>(mode.written_tokens), mode.best * 1e6 / static_cast<double>(tokens),
                rounds, static_cast<unsigned long long>(mode.compressed),
                static_cast<unsigned long long>(mode.decompressed),
                static_cast<double>(mode.decompressed) / static_cast<double>(tokens), mode.name);
  return 0;
}
