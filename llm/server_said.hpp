// What a server said about one exchange, read from its stored response (format/server_said.hpp):
//   vLLM      top-level "metrics" (--enable-per-request-metrics; the final usage chunk when
//             streaming): queue_time_ms, time_to_first_token_ms, generation_time_ms; its TTFT
//             counts from scheduling, after the queue (vLLM's PR #46768: first_token_ts −
//             scheduled_ts; queue_time_ms scheduled_ts − queued_ts)
//   llama.cpp "timings" (the last event, or the body): prompt_ms (its TTFT on the server),
//             predicted_ms, prompt_n, cache_n
//   SGLang    "meta_info": e2e_latency (seconds), cached_tokens
//   TGI       headers x-queue-time, x-total-time, x-inference-time (milliseconds)
//   any       usage's prompt_tokens_details.cached_tokens (vLLM, OpenAI, retrace serve)
// Only the response's last events (or its body) are looked at, each for the key's last unescaped
// occurrence, and only the object after it is parsed (at most 64 KiB): what the decoder already
// read is not read whole again.
#pragma once

#include "format/trace.hpp"

namespace retrace::llm {

ServerSaid server_said(const Response& response);

}  // namespace retrace::llm
