# kill -9 of a recording proxy loses nothing it flushed: with --flush-every 1 each exchange is on
# disk once answered, and after kill -9 the trace still reads, every one of them in it.
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
exchanges_on_disk() {
  "$RETRACE" export "$WORK/run.rtrace" 2>/dev/null | grep -c '"exchange"' || true
}
all_flushed() { [[ "$(exchanges_on_disk)" -ge $sent ]]; }
wait_until "the proxy flushing all $sent exchanges" all_flushed
kill -9 "$proxy_PID"
wait "$proxy_PID" 2>/dev/null || true

"$RETRACE" inspect --json "$WORK/run.rtrace" >"$WORK/inspect.json" 2>"$WORK/inspect.err" \
  || { cat "$WORK/inspect.err" >&2; fail "inspect could not read the trace after kill -9"; }
"$RETRACE" export "$WORK/run.rtrace" >"$WORK/run.jsonl" 2>/dev/null || fail "export after kill -9"
got=$(grep -c '"exchange"' "$WORK/run.jsonl" || true)
check_eq "$got" "$sent" "exchanges kept by kill -9 after each was flushed"
echo "PASS record_kill9"
