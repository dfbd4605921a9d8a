#!/usr/bin/env bash
# Ctrl-C twice on `retrace serve`: the first SIGINT stops accepting and lets the request in flight
# finish (here it would take minutes, --drain-timeout 10m), the second exits 130 at once, as replay,
# sweep, bisect and demo do. Were the second signal swallowed, serve would wait for the request.
. "$(dirname "$0")/lib.sh"

start_listening SERVE "$RETRACE" serve --listen 127.0.0.1:0 --decode-step-ms 200 --drain-timeout 10m
body='{"model":"retrace-sim","prompt":"Tell me a long story.","max_tokens":2000,"ignore_eos":true,"stream":true}'
curl -sN -H 'content-type: application/json' -d "$body" "$SERVE_URL/v1/completions" >"$WORK/stream.out" 2>/dev/null &
curl_pid=$!
_PIDS+=("$curl_pid")
wait_for_line "$WORK/stream.out" "data: " "$curl_pid"

kill -INT "$SERVE_PID"
wait_for_line "$WORK/SERVE.err" "stopping; finishing in-flight requests" "$SERVE_PID"
kill -INT "$SERVE_PID"
status=0
wait "$SERVE_PID" || status=$?
check_eq "$status" "130" "exit status of serve after a second SIGINT"
echo "ok"
