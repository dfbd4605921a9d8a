#!/usr/bin/env bash
# One answer of 10^6 parts must never stall or lose a recording (issue 46 item 1). An upstream
# answers /v1/embeddings with 10^6 entries without "index" (18 MB), /v1/responses with 10^5
# function_call items and /v1/messages with 10^5 tool_use blocks, and chat with a short answer.
# Through `record`, the three pathological answers and 400 chat exchanges around them (8 client
# threads) are all written; SIGTERM with --drain-timeout 5s then ends record (waited for in a
# bounded loop: before, the linear part scan took hours on the first answer, the trace thread wrote
# nothing meanwhile and SIGTERM was ignored), with every exchange in the trace. The decoded
# answers hold 4,096 parts each, saying the rest were dropped. `replay` of that trace decodes the
# same answers again and ends, its exchanges written. Peak RSS of record and replay is printed and
# bounded (1 GiB).
. "$(dirname "$0")/lib.sh"

start_listening upstream python3 "$(dirname "$0")/parts_upstream.py" 1000000 100000

start_listening proxy /usr/bin/time -f '%M' -o "$WORK/record.kib" "$RETRACE" record --upstream "$upstream_URL" \
  --out "$WORK/rec.rtrace" --listen 127.0.0.1:0 --no-server-info --drain-timeout 5s

python3 - "$proxy_URL" >"$WORK/client.txt" <<'PY'
import http.client, json, sys, threading, urllib.parse
url = urllib.parse.urlparse(sys.argv[1])
work = [("/v1/embeddings", {"model": "m", "input": ["x"] * 3})] + \
       [("/v1/chat/completions", {"model": "m", "messages": [{"role": "user", "content": "q%d" % i}]}) for i in range(200)] + \
       [("/v1/responses", {"model": "m", "input": "x"}), ("/v1/messages", {"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "x"}]})] + \
       [("/v1/chat/completions", {"model": "m", "messages": [{"role": "user", "content": "r%d" % i}]}) for i in range(200)]
lock, ok = threading.Lock(), [0]
def client(mine):
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=600)
    for path, body in mine:
        conn.request("POST", path, json.dumps(body), {"content-type": "application/json"})
        response = conn.getresponse()
        response.read()
        with lock:
            ok[0] += response.status == 200
threads = [threading.Thread(target=client, args=(work[k::8],)) for k in range(8)]
for t in threads: t.start()
for t in threads: t.join()
print(ok[0])
PY
check_eq "$(cat "$WORK/client.txt")" 403 "every exchange was answered through the proxy"

# SIGTERM, then wait for record's exit: a bounded loop (a hang fails it, it measures nothing).
# ($proxy_PID is GNU time's, which passes no signal on: record is its child.)
record_pid=$(pgrep -P "$proxy_PID")
[[ -n "$record_pid" ]] || fail "record's process not found under GNU time"
kill -TERM "$record_pid"
for _ in $(seq 1 600); do kill -0 "$record_pid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$record_pid" 2>/dev/null && fail "record did not end within 60 s of SIGTERM (--drain-timeout 5s)"
status=0; wait "$proxy_PID" || status=$?
check_eq "$status" 0 "record's exit status"
echo "record's peak RSS: $(( $(tail -1 "$WORK/record.kib") / 1024 )) MiB"
(( $(tail -1 "$WORK/record.kib") < 1024 * 1024 )) || fail "record's peak RSS passed 1 GiB"

parts() {  # parts TRACE: "TARGET PARTS NOTE?" for each pathological exchange, sorted
  "$RETRACE" export "$1" | jq -r 'select(.exchange) | .exchange | select(.request.target != "/v1/chat/completions")
    | "\(.request.target) \(.choices | length) \(.decode_note | contains("more than 4096 outputs"))"' | sort
}
"$RETRACE" inspect --json "$WORK/rec.rtrace" >"$WORK/rec.json"
check_eq "$(jq -r '.counts.exchanges' "$WORK/rec.json")" 403 "the trace holds every exchange"
expected=$'/v1/embeddings 4096 true\n/v1/messages 4096 true\n/v1/responses 4096 true'
check_eq "$(parts "$WORK/rec.rtrace")" "$expected" "each answer holds the bound of parts and says so"

# replay decodes the same answers in its workers, and its run ends with every exchange.
status=0
/usr/bin/time -f '%M' -o "$WORK/replay.kib" "$RETRACE" replay "$WORK/rec.rtrace" --target "$upstream_URL" \
  --out "$WORK/run.rtrace" -c 8 --json >"$WORK/replay.json" 2>"$WORK/replay.err" || status=$?
check_eq "$status" 0 "replay's exit status"
check_eq "$(jq -r .completed "$WORK/replay.json")" 403 "every replayed exchange completed"
check_eq "$(parts "$WORK/run.rtrace")" "$expected" "the replay's answers hold the bound of parts and say so"
echo "replay's peak RSS: $(( $(tail -1 "$WORK/replay.kib") / 1024 )) MiB"
(( $(tail -1 "$WORK/replay.kib") < 1024 * 1024 )) || fail "replay's peak RSS passed 1 GiB"
echo "PASS many_parts"
