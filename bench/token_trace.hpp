// The input of the benches that measure a stage per streamed token over a trace's exchanges
// (record_trace_bench, run_writer_bench): `PROGRAM TRACE [ROUNDS] ...` parsed, the trace loaded
// whole, its decoded tokens counted; a usage line or a trace without tokens exits 2.
#pragma once

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "format/trace.hpp"
#include "llm/derive_tokens.hpp"

namespace retrace::bench {

struct TokenTrace {
  LoadedTrace trace;
  std::uint64_t tokens = 0;
  int rounds = 5;
};

inline TokenTrace load_token_trace(int argc, char** argv, const char* usage) {
  retrace::llm::install_token_deriver();  // format 1.7 (format/token_deriver.hpp)
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s\n", usage);
    std::exit(2);
  }
  TokenTrace loaded;
  if (argc > 2) loaded.rounds = std::max(1, std::atoi(argv[2]));
  loaded.trace = load_trace(argv[1]);
  for (const auto& exchange : loaded.trace.exchanges)
    for (const auto& choice : exchange.choices) loaded.tokens += choice.tokens.size();
  if (loaded.tokens == 0) {
    std::fprintf(stderr, "%s: %s has no decoded tokens\n", argv[0], argv[1]);
    std::exit(2);
  }
  return loaded;
}

}  // namespace retrace::bench
