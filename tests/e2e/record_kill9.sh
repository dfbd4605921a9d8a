# kill -9 of a recording proxy loses at most the last unflushed frame: with --flush-every 1 the
# trace still reads, and holds all but at most the last exchange.
. "$(dirname "$0")/lib.sh"

start_listening upstream "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off
start_listening proxy "$RETRACE" record --upstream "$upstream_URL" --out "$WORK/run.rtrace" \
  --listen 127.0.0.1:0 --flush-every 1 --no-server-info
sent=8
for i in $(seq 1 $sent); do
  curl -sf "$proxy_URL/v1/completions" -H 'Content-Type: application/json' \
    -d "{\"model\":\"retrace-sim\",\"prompt\":\"number $i\",\"max_tokens\":8,\"stream\":true}" >/dev/null \
    || fail "request $i through the proxy failed"
done
sleep 1
kill -9 "$proxy_PID"
wait "$proxy_PID" 2>/dev/null || true

"$RETRACE" inspect --json "$WORK/run.rtrace" >"$WORK/inspect.json" 2>"$WORK/inspect.err" \
  || { cat "$WORK/inspect.err" >&2; fail "inspect could not read the trace after kill -9"; }
"$RETRACE" export "$WORK/run.rtrace" >"$WORK/run.jsonl" 2>/dev/null || fail "export after kill -9"
got=$(grep -c '"exchange"' "$WORK/run.jsonl" || true)
check "kill -9 kept at least $((sent - 1)) of $sent exchanges (got $got)" test "$got" -ge $((sent - 1))
check "no exchange invented (got $got)" test "$got" -le "$sent"
echo "PASS record_kill9"
