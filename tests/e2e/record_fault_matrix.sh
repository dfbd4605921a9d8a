# The record fault matrix: one `retrace record` (64 file descriptors) in front of a misbehaving
# upstream (record_faults_upstream.py) goes through every fault in turn — upstream refused, reset
# mid-stream, stalled, 5xx, malformed SSE, the client gone mid-stream, an oversize request,
# Expect: 100-continue, HEAD, out of file descriptors — and after each one the proxy is still up
# and relays a normal request. At the end the trace holds every exchange with its error kind, and
# the counts per kind are exact (`retrace export` + jq). A full disk ends the run by design (exit
# 2, the exact count lost): tests/e2e/record_disk_full.sh.
. "$(dirname "$0")/lib.sh"

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
start_listening proxy bash -c "ulimit -n 64 && exec \"$RETRACE\" record --upstream http://127.0.0.1:$port \
  --out \"$WORK/matrix.rtrace\" --listen 127.0.0.1:0 --no-server-info --flush-every 1 --threads 1 \
  --upstream-timeout 1s --max-body 100000"
P=$proxy_URL
status() { curl -s --max-time 20 -o "$WORK/body" -w '%{http_code}' "$@" || true; }
normal() {  # the proxy still relays a normal request after fault $1
  check_eq "$(status "$P/after-$1")" 200 "a normal request after '$1'"
  check_contains "$WORK/body" "\"path\": \"/after-$1\"" "the normal request after '$1' got its own answer"
}

# refused: nothing listens upstream yet.
check_eq "$(status "$P/refused")" 502 "a refused upstream gives 502"
start_listening upstream python3 "$ROOT/tests/e2e/record_faults_upstream.py" "$port"
normal refused

# reset mid-stream: the client gets the bytes before the reset, then an abnormal end.
curl -sN --max-time 20 "$P/v1/chat/completions?fault=reset" -d '{}' >"$WORK/reset.out" 2>/dev/null &&
  fail "curl saw a normal end of a reset stream"
check_contains "$WORK/reset.out" '"Hel"' "bytes before the reset reach the client"
normal reset

check_eq "$(status "$P/stall")" 504 "a stalled upstream gives 504"
normal stall

check_eq "$(status "$P/status/503")" 503 "an upstream 503 is passed through"
normal 5xx

check_eq "$(status "$P/v1/chat/completions?fault=malformed" -d '{}')" 200 "a malformed stream is relayed"
check_contains "$WORK/body" "{not json" "the malformed event reaches the client as sent"
normal malformed

# The client goes away mid-stream (curl gives up after 0.5 s); the upstream sees the hang-up.
curl -sN --max-time 0.5 "$P/slow" >/dev/null 2>&1 || true
wait_for_line "$WORK/upstream.err" "proxy closed the upstream connection" "$upstream_PID"
normal client-gone

head -c 200000 /dev/zero | tr '\0' b >"$WORK/big"
check_eq "$(status --data-binary "@$WORK/big" "$P/oversize")" 413 "an oversize body gets 413"
normal oversize

check_eq "$(status -H 'Expect: 100-continue' -d '{"x":1}' "$P/expect")" 200 "Expect: 100-continue"
check_contains "$WORK/body" '"path": "/expect"' "Expect: 100-continue gets its own answer"
normal expect

check_eq "$(status -I "$P/head")" 405 "HEAD gets the upstream's 405"
normal head

# Out of file descriptors: 100 idle connections against 64 descriptors, then they go away.
cat >"$WORK/hold.py" <<'PY'
import socket, sys, time
host, port = sys.argv[1].split("//")[1].split(":")
held = [socket.create_connection((host, int(port))) for _ in range(int(sys.argv[2]))]
print("held %d" % len(held), flush=True)
time.sleep(3600)
PY
python3 "$WORK/hold.py" "$P" 100 >"$WORK/hold.out" 2>&1 &
hold_pid=$!
_PIDS+=("$hold_pid")
wait_for_line "$WORK/hold.out" "held 100" "$hold_pid"
wait_for_line "$WORK/proxy.err" "accept failed" "$proxy_PID"
kill "$hold_pid"
wait_for_line "$WORK/proxy.err" "accepting connections again" "$proxy_PID"
normal emfile

stop "$proxy_PID" || fail "record did not exit 0"
"$RETRACE" export "$WORK/matrix.rtrace" | jq -c 'select(.exchange) | .exchange' >"$WORK/matrix.jsonl"
kind_of() { jq -r --arg t "$1" 'select(.request.target == $t) | .error.kind' "$WORK/matrix.jsonl" | tr '\n' ' '; }
check_eq "$(kind_of /refused)" "connect " "refused"
check_eq "$(kind_of '/v1/chat/completions?fault=reset')" "reset " "reset mid-stream"
check_eq "$(kind_of /stall)" "timeout " "stall"
check_eq "$(kind_of /status/503)" "http_status " "5xx"
# A stream whose HTTP is sound but one event is not JSON: no transport error, a decode note.
check_eq "$(kind_of '/v1/chat/completions?fault=malformed')" "none " "malformed SSE"
check_eq "$(jq -r 'select(.request.target | endswith("fault=malformed")) | (.decode_note | length) > 0' "$WORK/matrix.jsonl")" \
  true "the malformed stream's exchange says what did not decode"
check_eq "$(kind_of /slow)" "cut " "client gone"
check_eq "$(kind_of /oversize)" "" "oversize (answered by record itself, not relayed)"
check_eq "$(kind_of /expect)" "none " "Expect: 100-continue"
check_eq "$(kind_of /head)" "http_status " "HEAD"
for fault in refused reset stall 5xx malformed client-gone oversize expect head emfile; do
  check_eq "$(kind_of "/after-$fault")" "none " "the normal request after $fault"
done
# Exact counts: nothing else in the trace.
check_eq "$(jq -r .error.kind "$WORK/matrix.jsonl" | sort | uniq -c | awk '{print $2 "=" $1}' | tr '\n' ' ')" \
  "connect=1 cut=1 http_status=2 none=12 reset=1 timeout=1 " "exchanges per error kind"
echo "ok"
