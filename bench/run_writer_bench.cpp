// replay's writer thread alone, on one core: each exchange of a trace summarized into the run's
// figures (metrics::summarize, StatsBuilder::add) and written by a TraceWriter at replay's zstd
// level (1) with the worker's word that its tokens came from its events, as RunWriter::drain does
// (replay/engine.cpp), then the figures finished. Prints the thread's CPU per token, the best of
// ROUNDS passes (this machine is shared), split into the summaries and the writer, and the size
// of the trace it wrote.
//
// Usage: run_writer_bench TRACE [ROUNDS] [KEEP.rtrace]
//   e.g. on a trace `retrace replay` wrote of streamed completions with logprobs. With KEEP, the
//   last pass's trace is kept there (two builds' traces compared with `zstd -dc`: the same bytes).
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>

#include "bench/thread_cpu.hpp"
#include "bench/token_trace.hpp"
#include "format/token_deriver.hpp"
#include "format/trace.hpp"
#include "metrics/stats.hpp"

using namespace retrace;
using metrics::StatsBuilder;
using metrics::summarize;

int main(int argc, char** argv) {
  auto [trace, tokens, rounds] = bench::load_token_trace(argc, argv, "run_writer_bench TRACE [ROUNDS] [KEEP.rtrace]");
  const bool keep = argc > 3;
  auto out = keep ? std::filesystem::path(argv[3])
                  : std::filesystem::temp_directory_path() /
                        ("run_writer_bench-" + std::to_string(::getpid()) + ".rtrace");
  WriterOptions options;
  options.zstd_level = 1;  // replay's writer (replay/engine.cpp, open_partial)
  double best_stats = 1e30, best_write = 1e30;
  std::uintmax_t size = 0;
  for (int round = 0; round < rounds; ++round) {
    StatsBuilder stats(false, {});
    double start = bench::thread_cpu_seconds();
    for (const auto& exchange : trace.exchanges) stats.add(summarize(exchange));
    auto figures = std::move(stats).finish();
    best_stats = std::min(best_stats, bench::thread_cpu_seconds() - start);
    if (figures.exchanges != trace.exchanges.size()) return 1;
    {
      TraceWriter writer(out, trace.header, options);
      start = bench::thread_cpu_seconds();
      for (const auto& exchange : trace.exchanges) write_with_word(writer, exchange, true);
      writer.close();
      best_write = std::min(best_write, bench::thread_cpu_seconds() - start);
    }
    size = std::filesystem::file_size(out);
  }
  if (!keep) std::filesystem::remove(out);
  auto per_token = [&](double s) { return s * 1e6 / static_cast<double>(tokens); };
  std::printf("%zu exchanges, %llu tokens: %.3f us/token of writer-thread CPU (summaries %.3f, "
              "writer %.3f), best of %d; trace %ju bytes\n",
              trace.exchanges.size(), static_cast<unsigned long long>(tokens),
              per_token(best_stats + best_write), per_token(best_stats), per_token(best_write), rounds,
              size);
  return 0;
}
