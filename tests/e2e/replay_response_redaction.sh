#!/usr/bin/env bash
# Secret response headers (Set-Cookie, X-Api-Key) are redacted in every replayed exchange, the
# first on a connection and every later one on the same worker and connection (replay remembers
# each header name's verdict per worker), while other headers keep their values.
. "$(dirname "$0")/lib.sh"

start_listening faulty python3 "$ROOT/tests/e2e/record_faults_upstream.py"
start_listening proxy "$RETRACE" record --upstream "$faulty_URL" --out "$WORK/rec.rtrace" \
  --listen 127.0.0.1:0 --no-server-info --flush-every 1
curl -sS --max-time 20 -o "$WORK/out" -H 'content-type: application/json' -d '{"prompt":"hi"}' \
  "$proxy_URL/v1/completions?fault=set-cookie" || fail "curl through record failed"
check_contains "$WORK/out" '"ok":true' "the upstream answered"
stop "$proxy_PID"

# One thread, one request at a time: five responses on one kept-alive connection.
"$RETRACE" replay "$WORK/rec.rtrace" --target "$faulty_URL" -c 1 --threads 1 --requests 5 \
  --no-stream --token-ids off --out "$WORK/rep.rtrace" >"$WORK/replay.out" 2>"$WORK/replay.err" \
  || { cat "$WORK/replay.err" >&2; fail "replay exit status"; }
"$RETRACE" export "$WORK/rep.rtrace" | jq -c 'select(.exchange) | .exchange' >"$WORK/rep.jsonl"
check_eq "$(wc -l <"$WORK/rep.jsonl")" 5 "five exchanges recorded"
check_eq "$(jq -s -c 'map(.error.kind)|unique' "$WORK/rep.jsonl")" '["none"]' "no exchange failed"
header() { jq -r --arg name "$1" '.response.headers[] | select(.[0] == $name) | .[1]' "$WORK/rep.jsonl" | tr '\n' ' '; }
check_eq "$(header Set-Cookie)" "[redacted] [redacted] [redacted] [redacted] [redacted] " "Set-Cookie redacted in every exchange"
check_eq "$(header X-Api-Key)" "[redacted] [redacted] [redacted] [redacted] [redacted] " "X-Api-Key redacted in every exchange"
check_eq "$(header X-Request-Id)" "r1 r1 r1 r1 r1 " "other headers kept"
if grep -q SECRET "$WORK/rep.jsonl"; then fail "a secret value reached the trace"; fi
echo "ok"
