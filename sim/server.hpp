// `retrace serve`: an OpenAI-compatible LLM server simulator for tests, demos and benchmarks.
//
// HTTP/1.1 with keep-alive (Boost.Beast request parsing, responses written straight to the
// socket). Endpoints: POST /v1/completions, POST /v1/chat/completions (streamed as vLLM streams:
// `data: {json}\n\n` per event, `data: [DONE]\n\n` last, chunked `text/event-stream`; with
// --reasoning, `reasoning_content` deltas first: sim/reasoning.hpp; a request with "tools" is
// answered with a call: sim/tool_calls.hpp), POST /v1/responses (the Responses API) and POST
// /v1/messages (Anthropic's Messages API), streamed as their event sequences or whole, with the
// same reasoning and tool calls (sim/shape_out.hpp), POST /v1/embeddings
// (sim/embeddings.hpp), POST /tokenize (vLLM's: {"prompt"} -> {"tokens", "count",
// "max_model_len"}), GET /v1/models, /health, /version, /metrics (Prometheus text). Errors use OpenAI's
// {"error": {"message", "type", "param", "code"}} shape.
//
// Scheduling is vLLM's continuous batching: waiting requests join the running batch (up to
// max_batch sequences) at the start of each iteration, every running sequence advances one token
// per iteration, and each new token is streamed as soon as its iteration ends. The latency model
// charges each iteration decode_step_ms + decode_ms_per_sequence * batch + prefill_ms_per_token *
// (prompt tokens admitted this iteration); off, iterations run back to back.
//
// The model is sim/engine.hpp's deterministic toy, not an LLM; see there for how
// --batch-variance makes outputs depend on the batch, as batched GPU kernels can.
//
// Everything runs on one thread (one io_context): the network, the scheduler and the model, so
// there are no locks, and a client of the same machine keeps the other core.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "base/clock.hpp"

namespace retrace::sim {

struct ServeOptions {
  std::string listen = "127.0.0.1:8000";
  std::string model_name = "retrace-sim";
  std::vector<std::string> more_model_names;  // also served; /v1/models lists them after model_name
  std::uint64_t weights_seed = 0;
  bool batch_variance = false;
  bool prefix_cache = true;     // reuse cached prompt blocks and report cached_tokens (vLLM's APC)
  bool cache_variance = false;  // a prefix-cache hit changes the reduction order (scheduler.cpp)
  int max_batch = 64;            // sequences (choices) in the running batch
  int max_model_len = 4096;      // prompt + completion tokens
  bool latency_model = true;
  // vLLM's --enable-per-request-metrics: a completion's or chat's answer ends with its own
  // timings, "metrics":{queue_time_ms, time_to_first_token_ms, ...} (sim/json_out.hpp).
  bool per_request_metrics = false;
  double prefill_ms_per_token = 0.05;
  double decode_step_ms = 12.0;
  double decode_ms_per_sequence = 0.15;
  int stream_interval = 1;       // tokens coalesced into one SSE event
  int reasoning_tokens = 0;      // chat, responses, messages: the first N tokens are reasoning (sim/reasoning.hpp)
  std::size_t max_body = 8u << 20;
  std::string answers_path;      // JSONL of known answers, "" for none
  // Fault injection: this fraction of streamed requests (spread evenly: the k-th fails when
  // floor((k+1) f) > floor(k f)) fails after choice 0 streamed fail_after_tokens tokens (or at
  // its last token, if sooner) with vLLM's error event `data: {"error": {...}}`, then [DONE].
  double fail_mid_stream = 0;
  int fail_after_tokens = 2;
  std::chrono::milliseconds drain_timeout{5000};  // on SIGINT/SIGTERM, then cut what is left
  // A connection that has not sent a whole request header for this long is closed (idle
  // keep-alive connections and slow senders alike), so that held sockets cannot use up the
  // process's file descriptors.
  std::chrono::milliseconds idle_timeout{60000};
  // What a batching burst is timed on and what seeds each request's sampling; outlives serve().
  const Clock* clock = &Clock::system();
};

// Serves until SIGINT or SIGTERM, then stops accepting, lets in-flight requests finish for up to
// drain_timeout, closes what is left and returns 0. Once listening, writes exactly one line
// "listening on http://HOST:PORT" to `announce` and flushes it; notes go to `log`.
// Throws std::runtime_error for set-up problems (bad --listen, port in use, bad answers file).
int serve(const ServeOptions& options, std::ostream& announce, std::ostream& log);

}  // namespace retrace::sim
