# retrace record's admin endpoint (--admin-listen): /healthz, /readyz that flips to 503 when the
# upstream stops and back to 200 when it returns, and /metrics whose exchange counters equal what
# the trace holds after mixed traffic (recorded, sampled out, rejected 413 and 431, probes marked
# X-Retrace-Probe, upstream errors); malformed admin requests answered 400/404/405; a non-loopback
# admin address refused without --admin-listen-any.
. "$(dirname "$0")/lib.sh"

start_listening faulty python3 "$ROOT/tests/e2e/record_faults_upstream.py"
upstream_port=${faulty_URL##*:}

set +e
"$RETRACE" record --upstream "$faulty_URL" --out "$WORK/public.rtrace" --listen 127.0.0.1:0 \
  --no-server-info --admin-listen 0.0.0.0:0 >"$WORK/public.out" 2>"$WORK/public.err"
code=$?
set -e
check_eq "$code" 2 "a non-loopback --admin-listen without --admin-listen-any exits 2"
check_contains "$WORK/public.err" "--admin-listen-any" "the refusal names the flag that allows it"
[[ ! -e "$WORK/public.rtrace" ]] || fail "a refused --admin-listen left a trace behind"

start_listening proxy "$RETRACE" record --upstream "$faulty_URL" --out "$WORK/admin.rtrace" \
  --listen 127.0.0.1:0 --no-server-info --flush-every 1 --admin-listen 127.0.0.1:0 \
  --sample 0.5 --seed 7 --session-header X-Session --max-body 4096
ADMIN=$(grep -m1 -oE 'admin on http://[^ ]+' "$WORK/proxy.out" | sed 's/^admin on //')
[[ -n "$ADMIN" ]] || fail "record did not print 'admin on URL'"

code_of() { curl -s -o "$WORK/answer" -w '%{http_code}' "$@" || true; }
check_eq "$(code_of "$ADMIN/healthz")" 200 "/healthz answers 200"
ready() { [[ $(code_of "$ADMIN/readyz") == 200 ]]; }
wait_until "/readyz answering 200 with the upstream up" ready

# Requests the admin port refuses: each answered, never a crash.
check_eq "$(code_of "$ADMIN/nope")" 404 "an unknown admin path is 404"
check_eq "$(code_of -X POST "$ADMIN/metrics")" 405 "POST /metrics is 405"
python3 - "${ADMIN#http://}" <<'PY' || fail "a malformed admin request is answered 400"
import socket, sys
host, port = sys.argv[1].rsplit(":", 1)
for junk in (b"GARBAGE\r\n\r\n", b"GET / HTTP/9.9\r\n\r\n", b"GET /metrics HTTP/1.1\r\nX: " + b"a" * 20000 + b"\r\n\r\n"):
    s = socket.create_connection((host, int(port)), timeout=10)
    s.sendall(junk)
    answer = s.recv(100)
    s.close()
    assert answer.startswith(b"HTTP/1.1 400"), (junk[:20], answer)
PY
check_eq "$(code_of "$ADMIN/healthz")" 200 "/healthz still answers after malformed requests"

# Mixed traffic through the proxy; the script prints how many requests it sent.
python3 - "${proxy_URL#http://}" >"$WORK/sent" <<'PY' || fail "traffic"
import http.client, sys
host, port = sys.argv[1].rsplit(":", 1)
sent = 0
def send(path, body=b'{"messages":[{"role":"user","content":"hi"}]}', headers=None):
    global sent
    sent += 1
    c = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        c.request("POST", path, body=body, headers=headers or {})
        c.getresponse().read()
    except (OSError, http.client.HTTPException):
        pass  # a reset relayed as a reset
    c.close()
for i in range(40):
    for turn in range(2):
        send("/ok", headers={"X-Session": f"s{i}"})
for i in range(30):
    send("/status/500", headers={"X-Session": f"e{i}"})
for i in range(10):
    send("/reset", headers={"X-Session": f"r{i}"})
send("/ok", body=b"x" * 5000)                       # 413: over --max-body
send("/ok", headers={"X-Big": "a" * 70000})         # 431
for i in range(2):
    send("/ok", headers={"X-Retrace-Probe": "1", "X-Session": f"s{i}"})
print(sent)
PY
SENT=$(cat "$WORK/sent")

outcomes_total() {
  curl -s "$ADMIN/metrics" >"$WORK/metrics.txt" || return 1
  local total
  total=$(awk '/^retrace_record_exchanges_total\{/ {n += $2} END {print n + 0}' "$WORK/metrics.txt")
  [[ $total == "$SENT" ]]
}
wait_until "the metrics counting all $SENT exchanges" outcomes_total
flushed() {  # the last exchange flushed: the lag is back to 0
  curl -s "$ADMIN/metrics" >"$WORK/metrics.txt" && grep -qx 'retrace_record_flush_lag_seconds 0' "$WORK/metrics.txt"
}
wait_until "the flush lag back to 0" flushed
cp "$WORK/metrics.txt" "$WORK/final-metrics.txt"
for name in retrace_record_exchanges_total retrace_record_bytes_written_total retrace_record_segments_total \
            retrace_record_segments_deleted_total retrace_record_in_flight retrace_record_flush_lag_seconds \
            retrace_record_exchanges_lost_total; do
  check_contains "$WORK/final-metrics.txt" "# HELP $name " "HELP line of $name"
  check_contains "$WORK/final-metrics.txt" "# TYPE $name " "TYPE line of $name"
done
check_contains "$WORK/final-metrics.txt" "retrace_record_in_flight 0" "nothing in flight"
check_contains "$WORK/final-metrics.txt" "retrace_record_segments_total 1" "one segment"

# /readyz follows the upstream: 503 with the reason while it is down, 200 once it is back.
kill "$faulty_PID"; wait "$faulty_PID" 2>/dev/null || true
not_ready() { [[ $(code_of "$ADMIN/readyz") == 503 ]]; }
wait_until "/readyz turning 503 with the upstream stopped" not_ready
check_contains "$WORK/answer" "not ready: the upstream does not answer GET /health" "the 503 says why"
check_eq "$(code_of "$ADMIN/healthz")" 200 "/healthz stays 200 while the upstream is down"
start_listening faulty2 python3 "$ROOT/tests/e2e/record_faults_upstream.py" "$upstream_port"
wait_until "/readyz back to 200 with the upstream restarted" ready

stop "$proxy_PID" || { cat "$WORK/proxy.err" >&2; fail "record did not exit 0"; }
check_contains "$WORK/proxy.err" "2 X-Retrace-Probe" "the summary counts the probes kept out"
"$RETRACE" export "$WORK/admin.rtrace" >"$WORK/admin.jsonl"
python3 - "$WORK/final-metrics.txt" "$WORK/admin.jsonl" "$SENT" "$(stat -c %s "$WORK/admin.rtrace")" <<'PY' || fail "the metrics do not match the trace"
import collections, json, re, sys
metrics = {}
for line in open(sys.argv[1]):
    m = re.match(r'(\w+)(?:\{outcome="(\w+)"\})? (\S+)$', line.strip())
    if m: metrics[(m.group(1), m.group(2))] = float(m.group(3))
outcome = {o: int(v) for (name, o), v in metrics.items() if name == "retrace_record_exchanges_total"}
rows = [json.loads(l)["exchange"] for l in open(sys.argv[2]) if '"exchange"' in l[:20]]
in_trace = collections.Counter("recorded" if e["error"]["kind"] == "none" else e["error"]["kind"] for e in rows)
kept_out = {"sampled_out", "probe", "excluded", "over_limit"}
for name, count in outcome.items():
    if name not in kept_out:
        assert count == in_trace.get(name, 0), (name, count, in_trace)
for name in in_trace:
    assert name in outcome, (name, outcome)
assert sum(outcome.values()) == int(sys.argv[3]), (outcome, sys.argv[3])
assert outcome["probe"] == 2 and outcome["rejected"] == 2, outcome
assert outcome["excluded"] == 0 and outcome["over_limit"] == 0, outcome
# Every kind of traffic met: the sample kept some and left some out, errors of both kinds kept.
assert outcome["sampled_out"] > 0 and outcome["recorded"] > 0, outcome
assert outcome["http_status"] > 0 and outcome["reset"] > 0, outcome
# No probe in the trace; sessions whole: both turns of a kept session recorded.
assert not any(h[0].lower() == "x-retrace-probe" for e in rows for h in e["request"]["headers"]), "a probe was recorded"
turns = collections.Counter(e.get("session_id") for e in rows if e["request"]["target"] == "/ok" and e.get("session_id"))
assert all(n == 2 for n in turns.values()), turns
written = metrics[("retrace_record_bytes_written_total", None)]
assert 0 < written <= int(sys.argv[4]), (written, sys.argv[4])
assert metrics[("retrace_record_exchanges_lost_total", None)] == 0
PY
echo "PASS record_admin"
