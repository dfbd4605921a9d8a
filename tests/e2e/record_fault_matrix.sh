# The record fault matrix: one `retrace record` (64 file descriptors) in front of a misbehaving
# upstream (record_faults_upstream.py) goes through every fault in turn — upstream refused, reset
# mid-stream, stalled, 5xx, malformed SSE, the client gone mid-stream, requests record rejects
# itself (a body over --max-body, headers over the limit, malformed HTTP), an upstream that answers
# 413 and closes before reading the body, Expect: 100-continue, HEAD, out of file descriptors — and
# after each one the proxy is still up and relays a normal request. At the end the trace holds every
# exchange with its error kind, and the counts per kind are exact (`retrace export` + jq). A full disk ends the run by design (exit
# 2, the exact count lost): tests/e2e/record_disk_full.sh.
. "$(dirname "$0")/lib.sh"

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
start_listening proxy bash -c "ulimit -n 64 && exec \"$RETRACE\" record --upstream http://127.0.0.1:$port \
  --out \"$WORK/matrix.rtrace\" --listen 127.0.0.1:0 --no-server-info --flush-every 1 --threads 1 \
  --upstream-timeout 1s --max-body 12000000"
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

# Requests record rejects itself are answered by it and recorded as rejected.
head -c 13000000 /dev/zero | tr '\0' b >"$WORK/big"
check_eq "$(status --data-binary "@$WORK/big" "$P/oversize")" 413 "an oversize body gets 413"
normal oversize
check_eq "$(status -H "X-Big: $(head -c 70000 /dev/zero | tr '\0' h)" "$P/big-header")" 431 \
  "headers over the limit get 431"
normal big-header
# Malformed: the request line and Host parse, the third line is not a header field.
check_eq "$(python3 - "$P" <<'PY'
import socket, sys
host, port = sys.argv[1].split("//")[1].split(":")
s = socket.create_connection((host, int(port)))
s.sendall(b"GET /malformed-request HTTP/1.1\r\nHost: x\r\nnot a header line\r\n\r\n")
print(s.makefile("rb").readline().split()[1].decode())
PY
)" 400 "a malformed request gets 400"
normal malformed-request

# The upstream answers 413 after the request header and closes with the body unread: the write of
# the body fails (10 MB is more than the loopback buffers take), and the answer is relayed all the
# same, not replaced by a 502.
head -c 10000000 /dev/zero | tr '\0' b >"$WORK/big"
check_eq "$(status --data-binary "@$WORK/big" "$P/early-413")" 413 "the upstream's early 413 reaches the client"
check_contains "$WORK/body" "upstream says the body is too large" "the upstream's early 413 body reaches the client"
normal early-413

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
check_eq "$(kind_of /oversize)" "rejected " "oversize (answered by record itself, not relayed)"
check_eq "$(kind_of /big-header)" "rejected " "headers over the limit"
check_eq "$(kind_of /malformed-request)" "rejected " "malformed request"
check_eq "$(jq -r 'select(.error.kind == "rejected") | "\(.request.method) \(.request.target) \(.response.status)"' \
  "$WORK/matrix.jsonl" | tr '\n' ' ')" "POST /oversize 413 GET /big-header 431 GET /malformed-request 400 " \
  "each rejected request keeps its method, target and the status record answered"
check_eq "$(jq -r 'select(.request.target == "/malformed-request") | .request.headers | map(.[0]) | join(",")' \
  "$WORK/matrix.jsonl")" "Host" "a malformed request keeps the headers parsed before the bad line"
check_eq "$(kind_of /early-413)" "http_status " "the upstream's early 413"
check_eq "$(jq -r 'select(.request.target == "/early-413") | .response.status' "$WORK/matrix.jsonl")" 413 \
  "the upstream's early 413 is recorded with its status"
check_eq "$(kind_of /expect)" "none " "Expect: 100-continue"
check_eq "$(kind_of /head)" "http_status " "HEAD"
for fault in refused reset stall 5xx malformed client-gone oversize big-header malformed-request \
  early-413 expect head emfile; do
  check_eq "$(kind_of "/after-$fault")" "none " "the normal request after $fault"
done
# Exact counts: nothing else in the trace.
check_eq "$(jq -r .error.kind "$WORK/matrix.jsonl" | sort | uniq -c | awk '{print $2 "=" $1}' | tr '\n' ' ')" \
  "connect=1 cut=1 http_status=3 none=15 rejected=3 reset=1 timeout=1 " "exchanges per error kind"
# stats: the rejected requests are listed apart and are not requests of the run.
"$RETRACE" stats --json "$WORK/matrix.rtrace" >"$WORK/stats.json"
check_eq "$(jq -c '.other_requests | with_entries(select(.key | startswith("rejected")))' "$WORK/stats.json")" \
  '{"rejected by record (400) GET /malformed-request":1,"rejected by record (413) POST /oversize":1,"rejected by record (431) GET /big-header":1}' \
  "stats lists the rejected requests apart"
# The run's requests are the two chat completions (reset, malformed), whatever else the trace holds.
check_eq "$(jq -c '[.exchanges, (.errors | has("rejected"))]' "$WORK/stats.json")" '[2,false]' \
  "stats counts only inference requests as the run's, and no rejected one as a failed request"
# replay loads the recording and never sends what record rejected itself.
start_listening REPLAY_TARGET "$RETRACE" serve --listen 127.0.0.1:0
"$RETRACE" replay "$WORK/matrix.rtrace" --target "$REPLAY_TARGET_URL" --out "$WORK/replayed.rtrace" -c 2 --timeout 5s \
  --max-error-rate 1 >"$WORK/replay.out" 2>"$WORK/replay.err" || { cat "$WORK/replay.err" >&2; fail "replay of the matrix"; }
check_contains "$WORK/replay.err" "skipped 3 request(s) record rejected itself" "replay skips the rejected requests"
echo "ok"
