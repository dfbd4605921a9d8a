// (format 1.6) What the server itself said about one exchange, and the server's state over its
// life as the run's /metrics series had it: two parts of an Exchange (format/trace.hpp), written
// and read beside its other fields (format/wire.cpp), in `export` as "server" and "server_state".
// Readers that predate 1.6 skip both; a trace from before 1.6 reads them as not known.
#pragma once

#include <cstdint>
#include <string>

#include <boost/describe/class.hpp>

namespace retrace {

// Filled from the response by llm (llm/server_said.hpp) wherever a response is decoded, so record,
// replay and a re-decode alike. Times in milliseconds as the server measured them; -1: not said.
struct ServerSaid {
  std::string source;        // whose words: "vllm" (`metrics`, --enable-per-request-metrics),
                             // "llamacpp" (`timings`), "sglang" (`meta_info`), "tgi" (x-*-time
                             // headers), "usage" (only usage's cached tokens); "" nothing said
  double queue_ms = -1;      // waiting before it was scheduled
  double ttft_ms = -1;       // the server's time to first token (llama.cpp: its prompt's processing)
  double decode_ms = -1;     // generating after the first token (llama.cpp: predicted_ms)
  double e2e_ms = -1;        // the whole request (SGLang's e2e_latency, TGI's x-total-time)
  std::int64_t prompt_computed = -1;  // prompt tokens computed, not taken from a cache (llama.cpp)
  std::int64_t cached_tokens = -1;    // prompt tokens the prefix cache served (usage's
                                      // prompt_tokens_details, llama.cpp's cache_n, SGLang's)
  bool said() const { return !source.empty(); }
  bool operator==(const ServerSaid&) const = default;
};
BOOST_DESCRIBE_STRUCT(ServerSaid, (), (source, queue_ms, ttft_ms, decode_ms, e2e_ms, prompt_computed, cached_tokens))

// One moment of the server's /metrics series: the latest scrape sent at or before it whose answer
// had arrived when the exchange was written (sample and hold). -1: no scrape, or not exposed.
struct ServerSample {
  std::int64_t scrape_ns = -1;  // that scrape's offset_ns (how old the sample is, on the run clock)
  double running = -1, waiting = -1, kv_usage = -1;
  bool operator==(const ServerSample&) const = default;
};
BOOST_DESCRIBE_STRUCT(ServerSample, (), (scrape_ns, running, waiting, kv_usage))

// The join of an exchange to its trace's series (metrics/server_join.hpp): replay's, record's, shadow's.
struct ServerState {
  ServerSample at_send, at_first_token, at_end;
  double preemptions = -1;  // the preemptions counter's increase over scrapes in (send, end]
  bool known() const { return at_send.scrape_ns >= 0; }
  bool operator==(const ServerState&) const = default;
};
BOOST_DESCRIBE_STRUCT(ServerState, (), (at_send, at_first_token, at_end, preemptions))

}  // namespace retrace
