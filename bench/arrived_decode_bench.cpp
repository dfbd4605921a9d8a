// What net::decode_arrived costs a token on replay (b)'s streams (256 completions events with
// logprobs top 2, one read an event, ~300 B an event), the body arrived into a buffer reserved as
// a worker's later stream is (ArrivedBody::reserve_like): framed where it arrived and adopted by
// the events ("adopt", the default), against framed by copying into the events ("copy", the same
// body under a decode limit just below the adopting path's worst case, which takes the copying
// path and stores the same events). Each pass appends the reads, decodes them with a live
// ResponseDecoder and drops the exchange; the two alternate, a pass each, on the calling thread's
// CPU clock; the medians are printed last.
//
// Usage: arrived_decode_bench [ROUNDS (default 9)] [STREAMS A PASS (default 300)]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench/thread_cpu.hpp"
#include "llm/llm.hpp"
#include "net/arrived_body.hpp"

using namespace retrace;

namespace {

std::vector<std::string> b_events() {
  std::vector<std::string> events;
  for (int i = 0; i < 256; ++i) {
    const std::string word = " word" + std::to_string(i);
    events.push_back("data: {\"id\":\"cmpl-7f3a9c\",\"object\":\"text_completion\",\"created\":1733500000,"
                     "\"model\":\"retrace-sim\",\"choices\":[{\"index\":0,\"text\":\"" + word +
                     "\",\"logprobs\":{\"tokens\":[\"" + word + "\"],\"token_logprobs\":[-0.3125],"
                     "\"top_logprobs\":[{\"" + word + "\":-0.3125,\" other\":-1.4375}],\"text_offset\":[" +
                     std::to_string(i * 5) + "]},\"finish_reason\":null}]}\n\n");
  }
  events.push_back("data: [DONE]\n\n");
  return events;
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::max(1, std::atoi(argv[1])) : 9;
  const int streams = argc > 2 ? std::max(1, std::atoi(argv[2])) : 300;
  const auto events = b_events();
  std::size_t bytes = 0;
  for (const auto& event : events) bytes += event.size();
  std::printf("a stream: %zu events, %zu bytes\n", events.size(), bytes);
  std::vector<double> adopt, copy;
  std::size_t kept = 0;
  for (int round = 0; round < rounds; ++round) {
    for (bool adopting : {true, false}) {
      const double start = bench::thread_cpu_seconds();
      for (int n = 0; n < streams; ++n) {
        net::ArrivedBody body;
        body.reserve_like({bytes, events.size(), 3 * events.size()});
        std::int64_t at = 0;
        for (const auto& event : events) body.append(event, at += 1000);
        Exchange exchange;
        exchange.request.target = "/v1/completions";
        exchange.request.body = R"({"model":"m","prompt":"p","stream":true,"logprobs":2})";
        exchange.response.status = 200;
        llm::ResponseDecoder decoder(llm::Dialect::openai_completions);
        // frame_where_arrived's worst case, less one: the copying path.
        const std::size_t limit =
            adopting ? net::kMaxDecodedBytes : 2 * (body.size() + 1) * 16 + body.held_bytes() - 1;
        const char* arrived_at = nullptr;  // the adopting path keeps the bytes here
        body.for_each_read([&](std::string_view piece, std::int64_t, bool) {
          arrived_at = piece.data();
          return false;
        });
        net::decode_arrived(body, true, "", exchange.response, &decoder, at, limit);
        decoder.finish(exchange);
        kept += exchange.response.events.size();
        if ((exchange.response.events.bytes().data() == arrived_at) != adopting) {
          std::fprintf(stderr, "the %s side did not take its path\n", adopting ? "adopt" : "copy");
          return 1;
        }
      }
      const double us = (bench::thread_cpu_seconds() - start) * 1e6 / (double(streams) * 256);
      (adopting ? adopt : copy).push_back(us);
      std::printf("round %d %s: %.4f us a token\n", round, adopting ? "adopt" : "copy ", us);
    }
  }
  std::sort(adopt.begin(), adopt.end());
  std::sort(copy.begin(), copy.end());
  std::printf("median: adopt %.4f, copy %.4f us a token (adopt / copy %.3f; %zu events kept)\n",
              adopt[adopt.size() / 2], copy[copy.size() / 2], adopt[adopt.size() / 2] / copy[copy.size() / 2], kept);
  return 0;
}
