// retrace shadow's online comparison alone (shadow/verdict.hpp): pairs of exchanges handed to
// Pairing as the legs' trace threads hand them (primary, then control and candidate), every
// answer TOKENS tokens with ids, one in DIFFER of the candidate's differing at its middle token.
// Prints pairs compared per CPU second on one thread (issue 41's goal: >= 5,000 a second a core).
// Usage: shadow_pairing_bench [PAIRS] [TOKENS] [DIFFER]
#include <ctime>
#include <iostream>
#include <string>

#include "bench/thread_cpu.hpp"
#include "shadow/verdict.hpp"
#include "llm/derive_tokens.hpp"

using namespace retrace;

namespace {
Exchange answer(std::size_t tokens, std::size_t changed_at) {
  Exchange exchange;
  exchange.request.method = "POST";
  Choice choice;
  choice.kind = TokenKind::token_ids;
  for (std::size_t i = 0; i < tokens; ++i) {
    Token token;
    token.id = static_cast<std::int32_t>(i == changed_at ? 99999 : i * 7 % 32000);
    token.bytes = " w" + std::to_string(token.id);
    token.offset_ns = std::int64_t(i) * 20'000'000;
    token.has_logprob = true;
    token.logprob = -0.5f;
    choice.tokens.push_back(std::move(token));
  }
  exchange.choices.push_back(std::move(choice));
  return exchange;
}
}  // namespace

int main(int argc, char** argv) {
  retrace::llm::install_token_deriver();  // format 1.7 (format/token_deriver.hpp)
  const std::size_t pairs = argc > 1 ? std::stoul(argv[1]) : 20'000;
  const std::size_t tokens = argc > 2 ? std::stoul(argv[2]) : 256;
  const std::size_t differ = argc > 3 ? std::stoul(argv[3]) : 10;
  const auto same = answer(tokens, tokens), changed = answer(tokens, tokens / 2);
  shadow::Pairing pairing(true, diff::Options{});
  const double start = bench::thread_cpu_seconds();
  for (std::size_t tag = 1; tag <= pairs; ++tag) {
    pairing.on_primary(tag, same);
    pairing.on_mirror(shadow::Leg::control, tag, same);
    pairing.on_mirror(shadow::Leg::candidate, tag, tag % differ == 0 ? changed : same);
  }
  const double seconds = bench::thread_cpu_seconds() - start;
  auto verdict = pairing.snapshot();
  const std::size_t compared = verdict.legs[0].pairs + verdict.legs[1].pairs;
  std::cout << compared << " pairs of " << tokens << "-token answers (" << verdict.legs[1].differing
            << " differing) in " << seconds << " CPU s: " << static_cast<std::uint64_t>(compared / seconds)
            << " pairs per CPU second (each exchange's copy into the pairing included)\n";
}
