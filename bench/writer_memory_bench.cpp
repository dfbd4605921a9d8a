// writer_memory_bench: the TraceWriter's resident memory over a long recording.
//
//   build/<dir>/bench/writer_memory_bench [EXCHANGES=1000000] [DIRECTORY=/tmp] [FLUSH_EVERY=64]
//
// Writes EXCHANGES small recorded-like exchanges (a short chat request, a 16-token streamed
// response, usage) with the default writer options, and prints the process's resident set size
// (VmRSS from /proc/self/status) every tenth of the way and after close(), and the peak (VmHWM).
// Flat is the bar: the RSS at 100% should match the RSS at 10%. The trace is read back and its
// exchanges counted, so a writer that produced an unreadable file fails the run (exit 1).
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

#include "format/trace.hpp"
#include "llm/derive_tokens.hpp"

using namespace retrace;

namespace {

long status_kib(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  std::size_t length = std::char_traits<char>::length(field);
  while (std::getline(in, line))
    if (line.compare(0, length, field) == 0) return std::strtol(line.c_str() + length + 1, nullptr, 10);
  return -1;
}

Exchange make_exchange(std::uint64_t id) {
  Exchange exchange;
  exchange.id = id;
  exchange.key = RequestKey{id * 0x9E3779B97F4A7C15ull, ~id};
  exchange.request.method = "POST";
  exchange.request.target = "/v1/chat/completions";
  exchange.request.body = R"({"model":"m","stream":true,"messages":[{"role":"user","content":"question )" +
                          std::to_string(id) + R"("}]})";
  exchange.response.status = 200;
  exchange.response.streamed = true;
  Choice choice;
  choice.kind = TokenKind::text_deltas;
  for (int i = 0; i < 16; ++i) {
    Token token;
    token.bytes = " w" + std::to_string((id + i) % 97);
    token.offset_ns = 1000 * i;
    choice.tokens.push_back(token);
  }
  choice.finish_reason = "stop";
  exchange.choices.push_back(choice);
  return exchange;
}

}  // namespace

int main(int argc, char** argv) {
  retrace::llm::install_token_deriver();  // format 1.7 (format/token_deriver.hpp)
  std::uint64_t count = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1'000'000;
  std::filesystem::path directory = argc > 2 ? argv[2] : "/tmp";
  WriterOptions options;
  if (argc > 3) options.flush_every = std::strtoull(argv[3], nullptr, 10);
  std::filesystem::path path = directory / ("writer_memory_bench." + std::to_string(::getpid()) + ".rtrace");

  std::printf("exchanges %llu, flush_every %zu\n", static_cast<unsigned long long>(count),
              options.flush_every);
  std::printf("%10s %10s\n", "written", "rss_kib");
  {
    TraceWriter writer(path, TraceHeader{}, options);
    for (std::uint64_t i = 0; i < count; ++i) {
      writer.write(make_exchange(i));
      if ((i + 1) % (count / 10 == 0 ? 1 : count / 10) == 0)
        std::printf("%10llu %10ld\n", static_cast<unsigned long long>(i + 1), status_kib("VmRSS"));
    }
    writer.close();
  }
  std::printf("%10s %10ld\npeak rss %ld KiB, file %llu bytes\n", "closed", status_kib("VmRSS"),
              status_kib("VmHWM"),
              static_cast<unsigned long long>(std::filesystem::file_size(path)));

  TraceReader reader(path);
  std::uint64_t read = 0;
  Exchange exchange;
  while (reader.next(exchange)) ++read;
  std::filesystem::remove(path);
  std::printf("read back %llu exchanges, index %s, recovery %s\n",
              static_cast<unsigned long long>(read), reader.has_index() ? "present" : "absent",
              reader.recovery().clean() ? "clean" : reader.recovery().reason.c_str());
  return read == count ? 0 : 1;
}
