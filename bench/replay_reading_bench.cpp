// Replay's input path alone, without sending: what reading and preparing distinct recorded
// requests costs the client (bench/replay.sh section (a)'s "reading" term, the part of the fair
// peer that wrk, posting one fixed body, does not pay). Each round does what a streamed
// `retrace replay TRACE --limit LIMIT --no-stream --token-ids off` does before and beside its
// sends: scan_input (the read before the run), then the feed thread's loop (replay/feed.hpp: the
// trace read again, each chosen request prepared with the run's Preparer), on this thread and
// without the feed's hand-off to the workers. Prints the CPU per request, the best of ROUNDS (the
// least disturbed: this machine is shared).
//
// Usage: replay_reading_bench TRACE LIMIT [ROUNDS]
//   e.g. on bench/replay.sh's short.rtrace with the limit its replay run used.
#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>

#include "net/url.hpp"
#include "replay/feed.hpp"

using namespace retrace;

namespace {

double process_cpu_seconds() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: replay_reading_bench TRACE LIMIT [ROUNDS]\n");
    return 2;
  }
  const std::string path = argv[1];
  const auto limit = static_cast<std::size_t>(std::strtoull(argv[2], nullptr, 10));
  const int rounds = argc > 3 ? std::max(1, std::atoi(argv[3])) : 3;
  replay::Options options;
  options.target = "http://127.0.0.1:9";  // never contacted
  options.input = path;
  options.limit = limit;
  options.stream = false;
  options.token_ids = llm::TokenIdMode::off;
  double best = 1e30;
  std::size_t sent = 0;
  for (int round = 0; round < rounds; ++round) {
    double start = process_cpu_seconds();
    std::ostringstream warnings;
    auto input = replay::scan_input(path, options, warnings, "replay_reading_bench");
    replay::Preflight checked;  // what the preflight settles for retrace serve: one model, no ids
    checked.url = net::parse_url(options.target);
    if (input.facts.models.size() == 1) checked.model = *input.facts.models.begin();
    replay::Preparer prepare(options, checked);
    // The feed thread's loop (replay/feed.cpp, Feed::produce_in_order) without its hand-off to
    // the workers, which is part of sending.
    TraceReader reader(path);
    replay::Selection selection(options, false);
    Exchange exchange;
    sent = 0;
    for (auto count = input.count(options); sent < count && !selection.full() && reader.next_request(exchange);) {
      if (!selection.take(exchange)) continue;
      prepare(exchange);
      ++sent;
    }
    best = std::min(best, process_cpu_seconds() - start);
  }
  if (sent == 0) {
    std::fprintf(stderr, "replay_reading_bench: %s: no request chosen\n", path.c_str());
    return 2;
  }
  std::printf("%zu requests read and prepared: %.3f us/request of client CPU (scan, read, prepare), best of %d\n",
              sent, best * 1e6 / static_cast<double>(sent), rounds);
  return 0;
}
