// Generates the traces bench/diff.sh times `retrace diff` on: a baseline, an identical replay of
// it, and a replay where a given share of exchanges diverge at a random token.
//
//   diff_bench DIR [EXCHANGES] [TOKENS] [DIVERGENT_PER_MILLE]
//   -> DIR/baseline.rtrace  DIR/identical.rtrace  DIR/divergent.rtrace
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>

#include "format/trace.hpp"
#include "llm/derive_tokens.hpp"

using namespace retrace;

namespace {

const char* const kWords[] = {" the", " model", " answer", " is", " of", " a", " token", " and", " to", " in",
                              " server", " batch", ".", ",", " it", " we", " run", " time", " that", " not"};

Exchange make_exchange(std::uint64_t id, std::size_t tokens, std::mt19937& rng) {
  Exchange exchange;
  exchange.id = id;
  exchange.request.method = "POST";
  exchange.request.target = "/v1/completions";
  exchange.request.body = "{\"model\":\"sim\",\"prompt\":\"question " + std::to_string(id) +
                          ": explain the batch invariance of kernels\",\"max_tokens\":" + std::to_string(tokens) +
                          ",\"temperature\":0,\"logprobs\":1,\"stream\":true}";
  exchange.key = RequestKey{0x9E3779B97F4A7C15ull * (id + 1), id};
  exchange.response.status = 200;
  exchange.first_byte_ns = 20'000'000;
  exchange.end_ns = 20'000'000 + std::int64_t(tokens) * 15'000'000;
  Choice choice;
  choice.kind = TokenKind::token_ids;
  for (std::size_t t = 0; t < tokens; ++t) {
    Token token;
    token.id = std::int32_t(rng() % 20);
    token.bytes = kWords[token.id];
    token.has_logprob = true;
    token.logprob = -float(rng() % 1000) / 1000.0f;
    token.offset_ns = 20'000'000 + std::int64_t(t) * 15'000'000;
    choice.tokens.push_back(std::move(token));
  }
  choice.finish_reason = "length";
  exchange.choices.push_back(std::move(choice));
  exchange.usage = {32, std::int64_t(tokens), 32 + std::int64_t(tokens)};
  return exchange;
}

}  // namespace

int main(int argc, char** argv) {
  retrace::llm::install_token_deriver();  // format 1.7 (format/token_deriver.hpp)
  if (argc < 2) {
    std::fprintf(stderr, "usage: diff_bench DIR [EXCHANGES=100000] [TOKENS=128] [DIVERGENT_PER_MILLE=10]\n");
    return 2;
  }
  std::filesystem::path dir = argv[1];
  std::size_t exchanges = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 100000;
  std::size_t tokens = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 128;
  std::size_t per_mille = argc > 4 ? std::strtoull(argv[4], nullptr, 10) : 10;
  std::filesystem::create_directories(dir);

  TraceHeader header;
  header.tool_version = "diff_bench";
  header.source = Source::recorded;
  TraceWriter baseline(dir / "baseline.rtrace", header);
  header.source = Source::replayed;
  TraceWriter identical(dir / "identical.rtrace", header);
  TraceWriter divergent(dir / "divergent.rtrace", header);
  std::mt19937 rng(42), pick(7);
  std::size_t diverged = 0;
  for (std::size_t i = 0; i < exchanges; ++i) {
    Exchange exchange = make_exchange(i, tokens, rng);
    baseline.write(exchange);
    exchange.source_id = exchange.id;
    exchange.id = 1'000'000 + i;
    identical.write(exchange);
    if (pick() % 1000 < per_mille && tokens > 0) {
      std::size_t at = pick() % tokens;
      Token& token = exchange.choices[0].tokens[at];
      token.id = (token.id + 1) % 20;
      token.bytes = kWords[token.id];
      ++diverged;
    }
    divergent.write(exchange);
  }
  baseline.close();
  identical.close();
  divergent.close();
  std::printf("%zu exchanges x %zu tokens; %zu divergent in divergent.rtrace\n", exchanges, tokens, diverged);
  return 0;
}
