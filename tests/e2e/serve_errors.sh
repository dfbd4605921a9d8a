#!/usr/bin/env bash
# retrace serve rejects bad requests with the right status and an OpenAI error body naming the
# problem, keeps serving afterwards, and stops cleanly (exit 0) on SIGTERM mid-stream.
. "$(dirname "$0")/lib.sh"

start_listening SIM "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off --max-body 4096
URL=$SIM_URL

# expect_error STATUS PARAM WORDS METHOD PATH [BODY]: status, error JSON shape, param, message words.
expect_error() {
  local status=$1 param=$2 words=$3 method=$4 path=$5 body=${6-}
  local got
  if [[ -n "$body" ]]; then
    got=$(curl -sS -o "$WORK/err" -w '%{http_code}' -X "$method" -H 'content-type: application/json' --data-binary "$body" "$URL$path")
  else
    got=$(curl -sS -o "$WORK/err" -w '%{http_code}' -X "$method" "$URL$path")
  fi
  check_eq "$got" "$status" "$method $path ${body:0:80}"
  jq -e '.error | has("message") and has("type") and has("param") and has("code")' "$WORK/err" >/dev/null ||
    fail "error body shape for $method $path: $(cat "$WORK/err")"
  check_eq "$(jq -r '.error.param // "null"' "$WORK/err")" "$param" "error param for ${body:0:80}"
  jq -r '.error.message' "$WORK/err" | grep -qi -- "$words" || fail "message for ${body:0:80} lacks '$words': $(cat "$WORK/err")"
}

expect_error 400 null "not valid JSON" POST /v1/completions '{"prompt": "x",'
expect_error 400 null "JSON object" POST /v1/completions '[1,2]'
expect_error 400 prompt "prompt" POST /v1/completions '{"model":"retrace-sim"}'
expect_error 400 messages "messages" POST /v1/chat/completions '{"model":"retrace-sim","prompt":"x"}'
expect_error 400 "messages[0].role" "role" POST /v1/chat/completions '{"messages":[{"content":"hi"}]}'
expect_error 400 max_tokens "max_tokens" POST /v1/completions '{"prompt":"x","max_tokens":"ten"}'
expect_error 400 max_tokens "max_tokens" POST /v1/completions '{"prompt":"x","max_tokens":0}'
expect_error 400 max_tokens "context length" POST /v1/completions '{"prompt":"x","max_tokens":100000}'
expect_error 400 temperature "temperature" POST /v1/completions '{"prompt":"x","temperature":-1}'
expect_error 400 top_p "top_p" POST /v1/completions '{"prompt":"x","top_p":0}'
expect_error 400 n "n" POST /v1/completions '{"prompt":"x","n":0}'
expect_error 400 stop "stop" POST /v1/completions '{"prompt":"x","stop":[1]}'
expect_error 400 logprobs "logprobs" POST /v1/completions '{"prompt":"x","logprobs":99}'
expect_error 400 top_logprobs "logprobs" POST /v1/chat/completions '{"messages":[{"role":"user","content":"x"}],"top_logprobs":2}'
expect_error 400 stream_options "stream" POST /v1/completions '{"prompt":"x","stream_options":{"include_usage":true}}'
expect_error 400 prompt "token id" POST /v1/completions '{"prompt":[1,2,99999999]}'
expect_error 404 model "does not exist" POST /v1/completions '{"model":"gpt-4","prompt":"x"}'
expect_error 404 null "Unknown request URL" GET /v1/nothing
expect_error 404 null "Unknown request URL" POST /v2/completions '{}'
expect_error 405 null "not allowed" GET /v1/completions
expect_error 405 null "not allowed" DELETE /v1/models
expect_error 413 null "limit" POST /v1/completions "{\"prompt\":\"$(head -c 6000 /dev/zero | tr '\0' a)\"}"
# a chunked body over the limit (no Content-Length to check up front)
got=$(head -c 6000 /dev/zero | tr '\0' a | curl -sS -o "$WORK/err" -w '%{http_code}' -H 'transfer-encoding: chunked' --data-binary @- "$URL/v1/completions")
check_eq "$got" 413 "chunked oversized body"
# a chunked body whose trailer holds a field longer than one may (65,533 bytes): 431 naming it,
# where Beast's fields would throw out of the read's handler and drop the connection (#34 item 1)
python3 - "${URL#http://}" >"$WORK/trailer" <<'PY'
import socket, sys
host, port = sys.argv[1].rsplit(":", 1)
body = b'{"prompt":"x","max_tokens":1}'
with socket.create_connection((host, int(port))) as conn:
    conn.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"Transfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\nX-Trailer: %s\r\n\r\n"
                 % (len(body), body, b"a" * 70000))
    answer = b""
    while chunk := conn.recv(65536):  # serve closes after an error answer
        answer += chunk
sys.stdout.write(answer.decode())
PY
check_eq "$(head -1 "$WORK/trailer" | tr -d '\r')" "HTTP/1.1 431 Request Header Fields Too Large" "a trailer field too long"
check_contains "$WORK/trailer" "request header field X-Trailer: its value is 70000 bytes, over the 65533 bytes one field may hold" \
  "the 431 names the field"
# headers of 10 KB in all, each field short (over Beast's 8 KiB for a whole header): 431, as servers
# answer, not 400
many=(); for i in $(seq 1 20); do many+=(-H "X-Field-$i: $(head -c 500 /dev/zero | tr '\0' v)"); done
check_eq "$(curl -sS -o "$WORK/many" -w '%{http_code}' "${many[@]}" "$URL/health")" 431 "a header over 8 KiB in all"
check_contains "$WORK/many" "request header is over the limit of 8192 bytes" "the 431 says what was too large"

# garbage on the socket gets a 400 (or a closed connection) and the server lives on
printf 'NOT HTTP AT ALL\r\n\r\n' | timeout 5 bash -c "exec 3<>/dev/tcp/${URL#http://}; cat >&3; cat <&3" >"$WORK/garbage" 2>/dev/null || true
[[ ! -s "$WORK/garbage" ]] || grep -q '^HTTP/1.1 400' "$WORK/garbage" || fail "garbage answered with $(head -1 "$WORK/garbage")"
# a client that hangs up mid-stream
curl -sS -N -m 0.2 -H 'content-type: application/json' -d '{"prompt":"x","max_tokens":4000,"ignore_eos":true,"stream":true}' "$URL/v1/completions" >/dev/null 2>&1 || true
check_eq "$(curl -sS -o /dev/null -w '%{http_code}' "$URL/health")" 200 "still healthy after bad input"
check_eq "$(curl -sS -o /dev/null -w '%{http_code}' -H 'content-type: application/json' -d '{"prompt":"x","max_tokens":3}' "$URL/v1/completions")" 200 "still serving"

# SIGTERM while a stream is in flight (its first event has arrived; 200 tokens at 5 ms each take
# a second, well inside the drain timeout): the stream finishes and the server exits 0
start_listening SLOW "$RETRACE" serve --listen 127.0.0.1:0 --decode-step-ms 5 --drain-timeout 3s
curl -sS -N -H 'content-type: application/json' -d '{"prompt":"x","max_tokens":200,"ignore_eos":true,"stream":true}' "$SLOW_URL/v1/completions" >"$WORK/inflight" 2>/dev/null &
CURL_PID=$!
wait_for_line "$WORK/inflight" "data: " "$CURL_PID"
stop "$SLOW_PID" || fail "serve exited non-zero on SIGTERM"
wait "$CURL_PID" || true
tail -c 14 "$WORK/inflight" | grep -q 'data: \[DONE\]' || fail "in-flight stream was not finished before exit"
grep -q 'stopped' "$WORK/SLOW.err" || fail "no stop note on stderr"
curl -sS -m 2 "$SLOW_URL/health" >/dev/null 2>&1 && fail "still accepting after SIGTERM"

stop "$SIM_PID" || fail "serve exited non-zero on SIGTERM"
echo "serve_errors: ok"
