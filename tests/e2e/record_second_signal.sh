# Ctrl-C twice: the first SIGINT lets an exchange in flight finish (here for up to 600 s), the
# second cuts it at once. The proxy then exits 0 with the exchange recorded as cut by the shutdown
# and every completed exchange kept. Were the second signal ignored, the stream would run its
# 30 s to the end and be recorded complete.
. "$(dirname "$0")/lib.sh"

start_listening faulty python3 "$ROOT/tests/e2e/record_faults_upstream.py"
start_listening proxy "$RETRACE" record --upstream "$faulty_URL" --out "$WORK/run.rtrace" \
  --listen 127.0.0.1:0 --drain-timeout 10m --no-server-info --flush-every 1
P=$proxy_URL

check_eq "$(curl -s -o /dev/null -w '%{http_code}' "$P/ok")" 200 "a completed exchange first"

curl -sN "$P/v1/chat/completions?fault=slow" -d "{}" >"$WORK/slow.out" 2>/dev/null &
slow_pid=$!
wait_for_line "$WORK/slow.out" "data: " "$slow_pid"

kill -INT "$proxy_PID"
wait_for_line "$WORK/proxy.err" "Ctrl-C again to cut them now" "$proxy_PID"
kill -INT "$proxy_PID"
status=0
wait "$proxy_PID" || status=$?
[[ $status == 0 ]] || { cat "$WORK/proxy.err" >&2; fail "record exited $status after a second SIGINT, want 0"; }
wait "$slow_pid" || true
check_contains "$WORK/proxy.err" "cutting 1 exchange(s) in flight now" "the second signal says what it does"
check_contains "$WORK/proxy.err" "retrace record: interrupted" "the summary names the first signal as the reason"

"$RETRACE" export "$WORK/run.rtrace" >"$WORK/run.jsonl" || fail "the trace reads after a second SIGINT"
python3 - "$WORK/run.jsonl" <<'PY' || fail "recorded exchanges"
import json, sys
exchanges = [json.loads(l)["exchange"] for l in open(sys.argv[1]) if '"exchange"' in l[:20]]
by_target = {e["request"]["target"]: e for e in exchanges}
assert len(exchanges) == 2, [e["request"]["target"] for e in exchanges]
assert by_target["/ok"]["response"]["status"] == 200, by_target["/ok"]
slow = by_target["/v1/chat/completions?fault=slow"]
assert slow["error"]["kind"] == "cut", slow["error"]
assert "shutdown" in slow["error"]["message"], slow["error"]
assert "".join(t["bytes"] for t in slow["choices"][0]["tokens"]).startswith("tok0 "), slow["choices"]
PY
echo "PASS record_second_signal"
