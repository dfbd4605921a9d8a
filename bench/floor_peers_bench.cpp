// The floor's peers (issue 44): what any tool that keeps every streamed event and reads each one
// must spend a token, measured on the events of a recorded trace, one core, thread CPU time:
//   zstd   the events' bytes alone through libzstd at record's level (1), streamed in frames of
//          4 MiB as the trace writer closes them: the least that keeping the raw bytes costs;
//   parse  each event's JSON through Boost.JSON's validating SAX parser with a handler that keeps
//          nothing: the least that reading them with the parser the decoder uses costs.
// Their sum is the roofline under `record_trace_bench`'s floor (decode + store one event): the
// floor ÷ that sum is what retrace adds to the two costs it cannot avoid. Best of ROUNDS passes.
//
// Usage: floor_peers_bench RECORDED.rtrace [ROUNDS]   (the trace record_trace_bench reads)
#include <time.h>
#include <zstd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/basic_parser_impl.hpp>

#include "bench/thread_cpu.hpp"
#include "format/trace.hpp"
#include "llm/derive_tokens.hpp"

using namespace retrace;

namespace {

// Boost.JSON's SAX handler that accepts everything and keeps nothing.
struct NullHandler {
  static constexpr std::size_t max_object_size = std::size_t(-1);
  static constexpr std::size_t max_array_size = std::size_t(-1);
  static constexpr std::size_t max_key_size = std::size_t(-1);
  static constexpr std::size_t max_string_size = std::size_t(-1);
  bool on_document_begin(boost::json::error_code&) { return true; }
  bool on_document_end(boost::json::error_code&) { return true; }
  bool on_object_begin(boost::json::error_code&) { return true; }
  bool on_object_end(std::size_t, boost::json::error_code&) { return true; }
  bool on_array_begin(boost::json::error_code&) { return true; }
  bool on_array_end(std::size_t, boost::json::error_code&) { return true; }
  bool on_key_part(std::string_view, std::size_t, boost::json::error_code&) { return true; }
  bool on_key(std::string_view, std::size_t, boost::json::error_code&) { return true; }
  bool on_string_part(std::string_view, std::size_t, boost::json::error_code&) { return true; }
  bool on_string(std::string_view, std::size_t, boost::json::error_code&) { return true; }
  bool on_number_part(std::string_view, boost::json::error_code&) { return true; }
  bool on_int64(std::int64_t, std::string_view, boost::json::error_code&) { return true; }
  bool on_uint64(std::uint64_t, std::string_view, boost::json::error_code&) { return true; }
  bool on_double(double, std::string_view, boost::json::error_code&) { return true; }
  bool on_bool(bool, boost::json::error_code&) { return true; }
  bool on_null(boost::json::error_code&) { return true; }
  bool on_comment_part(std::string_view, boost::json::error_code&) { return true; }
  bool on_comment(std::string_view, boost::json::error_code&) { return true; }
};

// The JSON of one SSE event: its `data:` lines' payload (one line in every event measured here).
std::string_view payload(std::string_view event) {
  auto at = event.find("data:");
  if (at == std::string_view::npos) return {};
  event.remove_prefix(at + 5);
  if (!event.empty() && event.front() == ' ') event.remove_prefix(1);
  while (!event.empty() && (event.back() == '\n' || event.back() == '\r')) event.remove_suffix(1);
  return event;
}

}  // namespace

int main(int argc, char** argv) {
  retrace::llm::install_token_deriver();  // a trace written with --derive-tokens reads too
  if (argc < 2) {
    std::fprintf(stderr, "usage: floor_peers_bench RECORDED.rtrace [ROUNDS]\n");
    return 2;
  }
  const int rounds = argc > 2 ? std::max(1, std::atoi(argv[2])) : 5;
  std::vector<std::string> events;
  std::uint64_t tokens = 0, bytes = 0;
  {
    auto trace = load_trace(argv[1]);
    for (const auto& exchange : trace.exchanges) {
      if (!exchange.response.streamed) continue;
      for (const auto& choice : exchange.choices) tokens += choice.tokens.size();
      for (const auto& event : exchange.response.events) {
        events.emplace_back(event.data);
        bytes += event.data.size();
      }
    }
  }
  if (tokens == 0) {
    std::fprintf(stderr, "floor_peers_bench: %s has no streamed tokens\n", argv[1]);
    return 2;
  }
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, 1);
  std::vector<char> out(ZSTD_CStreamOutSize());
  constexpr std::uint64_t kFrameBytes = 4u << 20;
  double best_zstd = 1e30, best_parse = 1e30;
  std::uint64_t compressed = 0, parsed = 0;
  for (int round = 0; round < rounds; ++round) {
    double started = bench::thread_cpu_seconds();
    std::uint64_t in_frame = 0;
    compressed = 0;
    for (const auto& event : events) {
      ZSTD_inBuffer in{event.data(), event.size(), 0};
      in_frame += event.size();
      const bool last = in_frame >= kFrameBytes || &event == &events.back();
      ZSTD_EndDirective mode = last ? ZSTD_e_end : ZSTD_e_continue;
      for (;;) {
        ZSTD_outBuffer o{out.data(), out.size(), 0};
        std::size_t left = ZSTD_compressStream2(cctx, &o, &in, mode);
        if (ZSTD_isError(left)) {
          std::fprintf(stderr, "floor_peers_bench: zstd: %s\n", ZSTD_getErrorName(left));
          return 1;
        }
        compressed += o.pos;
        if (mode == ZSTD_e_end ? left == 0 : in.pos == in.size) break;
      }
      if (last) in_frame = 0;
    }
    best_zstd = std::min(best_zstd, bench::thread_cpu_seconds() - started);

    started = bench::thread_cpu_seconds();
    parsed = 0;
    boost::json::basic_parser<NullHandler> parser{boost::json::parse_options{}};
    for (const auto& event : events) {
      std::string_view json = payload(event);
      if (json.empty() || json == "[DONE]") continue;
      boost::json::error_code ec;
      parser.reset();
      parser.write_some(false, json.data(), json.size(), ec);
      if (!ec) ++parsed;
    }
    best_parse = std::min(best_parse, bench::thread_cpu_seconds() - started);
  }
  ZSTD_freeCCtx(cctx);
  const double per = 1e6 / static_cast<double>(tokens);
  std::printf("events %zu (%llu parsed), tokens %llu, %.1f bytes a token\n", events.size(),
              static_cast<unsigned long long>(parsed), static_cast<unsigned long long>(tokens),
              static_cast<double>(bytes) / static_cast<double>(tokens));
  std::printf("zstd level 1 of the events alone: %.3f us a token (%.1f MB/s, %.1f %% of the bytes)\n",
              best_zstd * per, static_cast<double>(bytes) / best_zstd / 1e6,
              100.0 * static_cast<double>(compressed) / static_cast<double>(bytes));
  std::printf("Boost.JSON SAX, a handler that keeps nothing: %.3f us a token (%.1f MB/s)\n",
              best_parse * per, static_cast<double>(bytes) / best_parse / 1e6);
  std::printf("roofline (zstd + parse): %.3f us a token\n", (best_zstd + best_parse) * per);
}
