-- wrk script for bench/serve.sh: every request POSTs one greedy completion of exactly
-- SERVE_MAX_TOKENS tokens (ignore_eos), streamed unless SERVE_STREAM=false, so completed requests
-- times SERVE_MAX_TOKENS is the number of tokens the client received.
local max_tokens = tonumber(os.getenv("SERVE_MAX_TOKENS") or "256")
local stream = os.getenv("SERVE_STREAM") or "true"
wrk.method = "POST"
wrk.path = "/v1/completions"
wrk.headers["Content-Type"] = "application/json"
wrk.body = string.format(
  '{"model":"retrace-sim","prompt":"Write a long report about the river and the town.",' ..
  '"max_tokens":%d,"temperature":0,"ignore_eos":true,"stream":%s}', max_tokens, stream)

done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("RESULT requests=%d duration_us=%d errors=%d non2xx=%d p50_ms=%.1f p99_ms=%.1f\n",
    summary.requests, summary.duration, e.connect + e.read + e.write + e.timeout, e.status,
    latency:percentile(50) / 1000, latency:percentile(99) / 1000))
end
