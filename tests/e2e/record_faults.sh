# retrace record facing a misbehaving upstream and bad clients: every fault gets the answer the
# issue names, is recorded with its error kind, and the proxy stays up. SIGTERM with an exchange in
# flight past the drain deadline records it as cut and exits 0.
. "$(dirname "$0")/lib.sh"

start_listening faulty python3 "$ROOT/tests/e2e/record_faults_upstream.py"
start_listening proxy "$RETRACE" record --upstream "$faulty_URL" --out "$WORK/faults.rtrace" \
  --listen 127.0.0.1:0 --upstream-timeout 1s --max-body 1000 --drain-timeout 300ms --no-server-info --flush-every 1
P=$proxy_URL

status() { curl -s -o "$WORK/body" -w '%{http_code}' "$@" || true; }

# Upstream answers 500: passed through unchanged.
check_eq "$(status "$P/status/500")" 500 "upstream 500 passed through"
check_contains "$WORK/body" '"upstream says 500"' "upstream error body passed through"
check_eq "$(status "$P/status/404")" 404 "upstream 404 passed through"

# Upstream resets mid-stream: the client gets what was sent, then the stream ends abnormally.
set +e
curl -sN "$P/v1/chat/completions?fault=reset" -d "{}" >"$WORK/reset.out" 2>/dev/null
reset_exit=$?
set -e
check "curl saw an abnormal end of a reset stream (exit $reset_exit)" test "$reset_exit" -ne 0
check_contains "$WORK/reset.out" '"Hel"' "bytes before the reset reach the client"
check_contains "$WORK/reset.out" '"lo"' "bytes before the reset reach the client"

# Upstream stalls before answering: 504 after --upstream-timeout.
check_eq "$(status "$P/stall")" 504 "a stalled upstream gives 504"
check_contains "$WORK/body" '"type":"upstream_timeout"' "504 has a JSON error body"

# Upstream stalls mid-stream: the stream is cut.
set +e
curl -sN --max-time 10 "$P/v1/chat/completions?fault=stall-mid" -d "{}" >"$WORK/stall-mid.out" 2>/dev/null
stall_exit=$?
set -e
check "a stream stalled mid-way is cut, not completed (curl exit $stall_exit)" test "$stall_exit" -ne 0 -a "$stall_exit" -ne 28
check_contains "$WORK/stall-mid.out" '"Hel"' "bytes before the stall reach the client"

# The client goes away mid-stream: the proxy closes the upstream connection.
curl -sN --max-time 0.5 "$P/slow" >/dev/null 2>&1 || true
for i in $(seq 1 50); do
  grep -q "proxy closed the upstream connection" "$WORK/faulty.err" && break
  sleep 0.1
done
check_contains "$WORK/faulty.err" "proxy closed the upstream connection" "upstream request cancelled"

# Bad clients: 400, 431, 413; the proxy stays up.
exec 3<>"/dev/tcp/127.0.0.1/${P##*:}"
printf 'THIS IS NOT HTTP\r\n\r\n' >&3
timeout 5 cat <&3 >"$WORK/garbage.out" || true
exec 3<&-
check_contains "$WORK/garbage.out" "400" "malformed request gets 400"
big=$(head -c 70000 /dev/zero | tr '\0' a)
check_eq "$(status -H "X-Big: $big" "$P/ok")" 431 "oversize headers get 431"
check_eq "$(status --data-binary "$(head -c 2000 /dev/zero | tr '\0' b)" "$P/ok")" 413 "oversize body gets 413"
check_eq "$(status "$P/ok")" 200 "the proxy is still up"

# SIGTERM with a stream in flight: drained for 0.3 s, then recorded as cut; exit 0.
slow_requests() { grep -c "request GET /slow" "$WORK/faulty.err" || true; }
before=$(slow_requests)
curl -sN --max-time 20 "$P/slow" >"$WORK/slow2.out" 2>/dev/null &
slow_pid=$!
# Wait until the upstream has the request (it logs it), so the stream is in flight at SIGTERM.
for _ in $(seq 1 100); do (( $(slow_requests) > before )) && break; sleep 0.05; done
(( $(slow_requests) > before )) || fail "the second /slow request never reached the upstream"
stop "$proxy_PID" || fail "record did not exit 0 after SIGTERM with a stream in flight"
wait "$slow_pid" || true

# Upstream refuses: 502 with a JSON error body, kind connect.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
start_listening refused "$RETRACE" record --upstream "http://127.0.0.1:$port" --out "$WORK/refused.rtrace" \
  --listen 127.0.0.1:0 --no-server-info
check_eq "$(status "$refused_URL/v1/models")" 502 "a refused upstream gives 502"
check_contains "$WORK/body" '"type":"upstream_connect"' "502 has a JSON error body"
stop "$refused_PID" || fail "record did not exit 0"

"$RETRACE" export "$WORK/faults.rtrace" >"$WORK/faults.jsonl"
"$RETRACE" export "$WORK/refused.rtrace" >"$WORK/refused.jsonl"
python3 - "$WORK/faults.jsonl" "$WORK/refused.jsonl" <<'EOF' || fail "recorded error kinds"
import json, sys
def exchanges(path):
    return [json.loads(l)["exchange"] for l in open(path) if '"exchange"' in l[:20]]
by_target = {}
for e in exchanges(sys.argv[1]):
    by_target.setdefault(e["request"]["target"], []).append(e)
def one(target):
    assert target in by_target, (target, sorted(by_target))
    return by_target[target][0]
assert one("/status/500")["error"]["kind"] == "http_status"
assert one("/status/500")["response"]["status"] == 500
assert '"upstream says 500"' in one("/status/500")["response"]["body"]
assert one("/status/404")["error"]["kind"] == "http_status"
reset = one("/v1/chat/completions?fault=reset")
assert reset["error"]["kind"] == "reset", reset["error"]
assert "".join(t["bytes"] for t in reset["choices"][0]["tokens"]) == "Hello", reset["choices"]
assert one("/stall")["error"]["kind"] == "timeout", one("/stall")["error"]
assert one("/stall")["response"]["status"] == 0
mid = one("/v1/chat/completions?fault=stall-mid")
assert mid["error"]["kind"] == "timeout", mid["error"]
assert mid["response"]["status"] == 200
assert "".join(t["bytes"] for t in mid["choices"][0]["tokens"]) == "Hel"
slow = by_target["/slow"]
assert len(slow) == 2, len(slow)
assert all(e["error"]["kind"] == "cut" for e in slow), [e["error"] for e in slow]
assert any("client closed" in e["error"]["message"] for e in slow)
assert any("shutdown" in e["error"]["message"] for e in slow)
for e in slow:
    assert "".join(ev["data"] for ev in e["response"]["events"]).startswith("data: ")
# The requests record refused itself are recorded too, as rejected, with the status it answered.
ok = [(e["response"]["status"], e["error"]["kind"]) for e in by_target["/ok"]]
assert ok == [(431, "rejected"), (413, "rejected"), (200, "none")], ok
refused = exchanges(sys.argv[2])
assert len(refused) == 1 and refused[0]["error"]["kind"] == "connect", refused
EOF
echo "PASS record_faults"
