#!/usr/bin/env bash
# retrace serve speaks the OpenAI API as vLLM does: every endpoint and request option, streamed
# and not, over real sockets with curl.
. "$(dirname "$0")/lib.sh"

start_listening SIM "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off \
  --answers "$ROOT/tests/data/sim-answers.jsonl"
URL=$SIM_URL

# post PATH BODY OUT [extra curl args]: prints the HTTP status.
post() {
  local path=$1 body=$2 out=$3; shift 3
  curl -sS -o "$out" -w '%{http_code}' -H 'content-type: application/json' -d "$body" "$@" "$URL$path"
}
# events FILE: the JSON of each SSE event but [DONE], one per line.
events() { grep '^data: ' "$1" | sed 's/^data: //' | grep -v '^\[DONE\]$'; }
# check_sse FILE: exactly vLLM's framing: "data: {json}\n\n" per event, "data: [DONE]\n\n" last.
check_sse() {
  awk 'NR % 2 == 1 && !/^data: / { bad = 1 } NR % 2 == 0 && $0 != "" { bad = 1 } END { exit bad }' "$1" ||
    fail "$1 is not a sequence of 'data: ...' events separated by blank lines"
  check_eq "$(tail -c 14 "$1" | od -An -c | tr -s ' ')" "$(printf 'data: [DONE]\n\n' | od -An -c | tr -s ' ')" "$1 ends with data: [DONE]"
  events "$1" | jq -e . >/dev/null || fail "$1 has an event that is not JSON"
}

# --- GET endpoints
check_eq "$(curl -sS -o "$WORK/health" -w '%{http_code}' "$URL/health")" 200 "/health status"
check_eq "$(curl -sS -o "$WORK/models" -w '%{http_code}' "$URL/v1/models")" 200 "/v1/models status"
check_eq "$(jq -r '.data | length' "$WORK/models")" 1 "one model"
check_eq "$(jq -r '.data[0].id' "$WORK/models")" retrace-sim "model id"
jq -r '.data[0].owned_by + " " + .data[0].description' "$WORK/models" | grep -q 'simulator' || fail "model says it is a simulator"
check_eq "$(curl -sS -o /dev/null -w '%{http_code}' "$URL/version")" 200 "/version status"

# --- completions, non-streamed
status=$(post /v1/completions '{"model":"retrace-sim","prompt":"Once upon a time","max_tokens":24,"temperature":0}' "$WORK/c1")
check_eq "$status" 200 "completion status"
check_eq "$(jq -r '.object' "$WORK/c1")" text_completion "object"
jq -e '.id | startswith("cmpl-")' "$WORK/c1" >/dev/null || fail "completion id"
jq -e '.created > 1600000000 and .model == "retrace-sim" and (.system_fingerprint | length > 0)' "$WORK/c1" >/dev/null || fail "created/model/fingerprint"
jq -e '.choices[0].finish_reason == "length" or .choices[0].finish_reason == "stop"' "$WORK/c1" >/dev/null || fail "finish_reason"
jq -e '.usage.prompt_tokens > 0 and .usage.total_tokens == .usage.prompt_tokens + .usage.completion_tokens and .usage.completion_tokens <= 24' "$WORK/c1" >/dev/null || fail "usage"
TEXT=$(jq -j '.choices[0].text' "$WORK/c1")
[[ ${#TEXT} -gt 10 ]] || fail "completion text too short: '$TEXT'"

# the same request again is bit-identical (greedy)
post /v1/completions '{"model":"retrace-sim","prompt":"Once upon a time","max_tokens":24,"temperature":0}' "$WORK/c1b" >/dev/null
check_eq "$(jq -j '.choices[0].text' "$WORK/c1b")" "$TEXT" "greedy repeat"

# --- completions, streamed: framing, headers, same text, usage chunk
status=$(post /v1/completions '{"model":"retrace-sim","prompt":"Once upon a time","max_tokens":24,"temperature":0,"stream":true,"stream_options":{"include_usage":true}}' "$WORK/s1" -D "$WORK/s1.headers" -N)
check_eq "$status" 200 "stream status"
grep -qi '^content-type: text/event-stream' "$WORK/s1.headers" || fail "stream content-type"
grep -qi '^transfer-encoding: chunked' "$WORK/s1.headers" || fail "stream is chunked"
check_sse "$WORK/s1"
check_eq "$(events "$WORK/s1" | jq -j '.choices[0].text // empty')" "$TEXT" "streamed text equals non-streamed"
events "$WORK/s1" | tail -1 | jq -e '.choices == [] and .usage.completion_tokens > 0' >/dev/null || fail "final usage chunk"
events "$WORK/s1" | head -n -1 | jq -e '.object == "text_completion" and (.choices | length == 1)' >/dev/null || fail "chunk shape"
check_eq "$(events "$WORK/s1" | jq -r 'select(.choices[0].finish_reason != null) | .choices[0].finish_reason' | wc -l | tr -d ' ')" 1 "one finish_reason"

# --- chat, non-streamed and streamed
CHAT='"model":"retrace-sim","messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"Tell me about the sea."}],"max_tokens":30,"temperature":0'
post /v1/chat/completions "{$CHAT}" "$WORK/ch1" >/dev/null
check_eq "$(jq -r '.object' "$WORK/ch1")" chat.completion "chat object"
check_eq "$(jq -r '.choices[0].message.role' "$WORK/ch1")" assistant "chat role"
CHAT_TEXT=$(jq -j '.choices[0].message.content' "$WORK/ch1")
[[ -n "$CHAT_TEXT" ]] || fail "empty chat content"
post /v1/chat/completions "{$CHAT,\"stream\":true}" "$WORK/chs" -N >/dev/null
check_sse "$WORK/chs"
events "$WORK/chs" | sed -n 1p | jq -e '.object == "chat.completion.chunk" and .choices[0].delta.role == "assistant"' >/dev/null || fail "first chat chunk carries the role"
check_eq "$(events "$WORK/chs" | jq -j '.choices[0].delta.content // empty')" "$CHAT_TEXT" "streamed chat equals non-streamed"
events "$WORK/chs" | jq -e '.usage == null' >/dev/null || fail "no usage chunk unless asked"

# --- logprobs (completions: legacy lists; chat: content entries)
post /v1/completions '{"prompt":"Once upon a time","max_tokens":8,"temperature":0,"logprobs":3}' "$WORK/lp" >/dev/null
jq -e '.choices[0].logprobs | (.tokens | length) == 8 or (.tokens | length) == (.token_logprobs | length)' "$WORK/lp" >/dev/null || fail "logprob lists"
jq -e '.choices[0].logprobs | (.top_logprobs[0] | length) >= 3 and .text_offset[0] == 0 and (.token_logprobs | all(. <= 0))' "$WORK/lp" >/dev/null || fail "top_logprobs / text_offset"
check_eq "$(jq -j '.choices[0].logprobs.tokens | join("")' "$WORK/lp")" "$(jq -j '.choices[0].text' "$WORK/lp")" "tokens concatenate to the text"
post /v1/chat/completions "{$CHAT,\"logprobs\":true,\"top_logprobs\":2}" "$WORK/clp" >/dev/null
jq -e '.choices[0].logprobs.content | length > 0 and all(.[]; (.top_logprobs | length) == 2 and (.bytes | type) == "array" and .logprob <= 0)' "$WORK/clp" >/dev/null || fail "chat logprobs"
post /v1/chat/completions "{$CHAT,\"logprobs\":true,\"top_logprobs\":2,\"stream\":true}" "$WORK/clps" -N >/dev/null
check_eq "$(events "$WORK/clps" | jq -c '.choices[0].logprobs.content // empty | .[]' | wc -l | tr -d ' ')" \
  "$(jq '.choices[0].logprobs.content | length' "$WORK/clp")" "streamed chat logprobs cover every token"

# --- vLLM token ids
post /v1/completions '{"prompt":"Once upon a time","max_tokens":6,"temperature":0,"logprobs":1,"return_tokens_as_token_ids":true}' "$WORK/tid" >/dev/null
jq -e '.choices[0].logprobs.tokens | all(startswith("token_id:"))' "$WORK/tid" >/dev/null || fail "return_tokens_as_token_ids"
post /v1/completions '{"prompt":"Once upon a time","max_tokens":6,"temperature":0,"return_token_ids":true}' "$WORK/rti" >/dev/null
jq -e '(.choices[0].token_ids | length) == .usage.completion_tokens and (.choices[0].prompt_token_ids | length) == .usage.prompt_tokens' "$WORK/rti" >/dev/null || fail "return_token_ids (completions)"
check_eq "$(jq -c '[.choices[0].logprobs.tokens[] | ltrimstr("token_id:") | tonumber]' "$WORK/tid")" "$(jq -c '.choices[0].token_ids' "$WORK/rti")" "token ids agree"
post /v1/completions '{"prompt":"Once upon a time","max_tokens":6,"temperature":0,"return_token_ids":true,"stream":true}' "$WORK/rtis" -N >/dev/null
check_eq "$(events "$WORK/rtis" | jq -c '.choices[0].token_ids[]' | jq -s -c .)" "$(jq -c '.choices[0].token_ids' "$WORK/rti")" "streamed token_ids"
post /v1/chat/completions "{$CHAT,\"return_token_ids\":true}" "$WORK/crti" >/dev/null
jq -e '(.prompt_token_ids | length) == .usage.prompt_tokens and (.choices[0].token_ids | length) == .usage.completion_tokens' "$WORK/crti" >/dev/null || fail "return_token_ids (chat)"

# --- stop, n, seed
STOP=$(printf '%s' "$TEXT" | cut -c 8-10)
post /v1/completions "$(jq -nc --arg s "$STOP" '{prompt:"Once upon a time",max_tokens:24,temperature:0,stop:["zzzz",$s]}')" "$WORK/stop" >/dev/null
check_eq "$(jq -r '.choices[0].finish_reason' "$WORK/stop")" stop "stop finish_reason"
check_eq "$(jq -j '.choices[0].text' "$WORK/stop")" "${TEXT%%"$STOP"*}" "text cut before the stop string"
check_eq "$(jq -r '.choices[0].stop_reason' "$WORK/stop")" "$STOP" "stop_reason"
post /v1/completions '{"prompt":"Hello","max_tokens":12,"temperature":1,"n":3,"seed":42}' "$WORK/n3" >/dev/null
check_eq "$(jq -c '[.choices[].index]' "$WORK/n3")" "[0,1,2]" "n choices"
post /v1/completions '{"prompt":"Hello","max_tokens":12,"temperature":1,"n":3,"seed":42}' "$WORK/n3b" >/dev/null
check_eq "$(jq -c '[.choices[].text]' "$WORK/n3b")" "$(jq -c '[.choices[].text]' "$WORK/n3")" "seeded sampling reproducible"
post /v1/completions '{"prompt":"Hello","max_tokens":12,"temperature":1,"n":3,"seed":43}' "$WORK/n3c" >/dev/null
[[ "$(jq -c '[.choices[].text]' "$WORK/n3c")" != "$(jq -c '[.choices[].text]' "$WORK/n3")" ]] || fail "another seed samples differently"
post /v1/completions '{"prompt":"Hello","max_tokens":12,"temperature":0.8,"top_p":0.5,"seed":1,"n":2,"stream":true}' "$WORK/n2s" -N >/dev/null
check_sse "$WORK/n2s"
check_eq "$(events "$WORK/n2s" | jq -c '.choices[0].index' | sort -u | tr '\n' ' ')" "0 1 " "streamed n=2 choices"

# --- known answers
post /v1/completions '{"prompt":"What is the capital of France?","max_tokens":50,"temperature":0}' "$WORK/ans" >/dev/null
check_eq "$(jq -j '.choices[0].text' "$WORK/ans")" " Paris is the capital of France." "answer by prompt"
check_eq "$(jq -r '.choices[0].finish_reason' "$WORK/ans")" stop "answer ends with stop"
post /v1/chat/completions '{"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Say hi"}],"stream":true}' "$WORK/ans2" -N >/dev/null
check_sse "$WORK/ans2"
check_eq "$(events "$WORK/ans2" | jq -j '.choices[0].delta.content // empty')" "Hi — café ☕" "answer by messages, streamed (UTF-8 intact)"

# --- /tokenize: vLLM's shape, the same ids a completion's prompt_token_ids reports
check_eq "$(post /tokenize '{"model":"retrace-sim","prompt":"Once upon a time, café"}' "$WORK/tok")" 200 "/tokenize status"
post /v1/completions '{"prompt":"Once upon a time, café","max_tokens":1,"return_token_ids":true}' "$WORK/tokc" >/dev/null
check_eq "$(jq -c '.tokens' "$WORK/tok")" "$(jq -c '.choices[0].prompt_token_ids' "$WORK/tokc")" "/tokenize ids equal the prompt's token ids"
jq -e '.count == (.tokens | length) and .count > 4 and .max_model_len == 4096' "$WORK/tok" >/dev/null || fail "/tokenize count and max_model_len"
check_eq "$(jq -r '.count' "$WORK/tok")" "$(jq -r '.usage.prompt_tokens' "$WORK/tokc")" "/tokenize count equals usage.prompt_tokens"
post /tokenize '{"content":"Once upon a time, café"}' "$WORK/tok2" >/dev/null
check_eq "$(jq -c '.tokens' "$WORK/tok2")" "$(jq -c '.tokens' "$WORK/tok")" "/tokenize takes content as prompt"
check_eq "$(post /tokenize '{"model":"retrace-sim"}' "$WORK/tok3")" 400 "/tokenize without a prompt"
check_eq "$(jq -r '.error.param' "$WORK/tok3")" prompt "/tokenize names the missing parameter"
check_eq "$(post /tokenize '{"model":"gpt-4","prompt":"x"}' "$WORK/tok4")" 404 "/tokenize of another model"
check_eq "$(curl -sS -o /dev/null -w '%{http_code}' "$URL/tokenize")" 405 "GET /tokenize"

# --- /metrics counts what happened
curl -sS "$URL/metrics" >"$WORK/metrics"
grep -qE '^retrace_sim_requests_served_total\{[^}]*\} [1-9][0-9]*$' "$WORK/metrics" || fail "requests served"
grep -qE '^retrace_sim_generation_tokens_total\{[^}]*\} [1-9][0-9]*$' "$WORK/metrics" || fail "tokens generated"
for name in requests_running requests_waiting batch_sequences_max prompt_tokens_total; do
  grep -q "^retrace_sim_$name" "$WORK/metrics" || fail "metric $name"
done

# --- keep-alive: two requests on one connection
curl -sS -o /dev/null -o /dev/null -w '%{num_connects}\n' "$URL/health" "$URL/v1/models" >"$WORK/conns"
check_eq "$(tr '\n' ' ' <"$WORK/conns")" "1 0 " "second request reuses the connection"

# --- --stream-interval coalesces tokens into fewer events, same text
start_listening COARSE "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off --stream-interval 4
curl -sS -N -H 'content-type: application/json' -d '{"prompt":"Once upon a time","max_tokens":24,"temperature":0,"stream":true,"return_token_ids":true}' "$COARSE_URL/v1/completions" >"$WORK/coarse"
check_sse "$WORK/coarse"
check_eq "$(events "$WORK/coarse" | jq -j '.choices[0].text')" "$TEXT" "coalesced text"
events "$WORK/coarse" | jq -e '(.choices[0].token_ids | length) <= 4' >/dev/null || fail "at most 4 tokens per event"
events "$WORK/coarse" | sed -n 1p | jq -e '(.choices[0].token_ids | length) == 4' >/dev/null || fail "first event carries 4 tokens"

stop "$SIM_PID" || fail "serve exited non-zero on SIGTERM"
echo "serve_api: ok"
