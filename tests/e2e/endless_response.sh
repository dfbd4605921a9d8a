#!/usr/bin/env bash
# A response that never ends: an upstream answers every streamed chat request with events for ever
# (bounded here at 2,000,000 events, ~200 MB, so a failure cannot hang the test). With
# --max-response-bytes 2000000, replay cuts each such exchange at the bound as truncated, keeps
# what arrived up to it, and goes on to the next request; record ends its client's stream there,
# writes the exchange truncated and records the next exchange; sweep keeps the flag in plan.json.
# Replay's peak RSS stays far below what an unbounded stream reaches (GNU time's max RSS: before,
# 2.4 GB in 65 s). A bound of 0 is refused naming the flag.
. "$(dirname "$0")/lib.sh"

cat >"$WORK/endless.py" <<'PY'
import http.server, json
from loopback_http import reply, serve
EVENT = b'data: {"choices":[{"index":0,"delta":{"content":"' + b"x" * 40 + b'"}}]}\n\n'
CHUNK = EVENT * 100
class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        reply(self, 200, "application/json", json.dumps({"object": "list", "data": [{"id": "m", "object": "model"}]}).encode())
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        if not body.get("stream"):
            reply(self, 200, "application/json", json.dumps({"choices": [{"index": 0, "message": {"role": "assistant", "content": "short"}, "finish_reason": "stop"}]}).encode())
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            for _ in range(20_000):  # 2,000,000 events: "for ever" for a 2 MB bound, yet bounded
                self.wfile.write(b"%x\r\n%s\r\n" % (len(CHUNK), CHUNK))
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass
        self.close_connection = True
    def log_message(self, *args):
        pass
serve(Handler)
PY
start_listening endless python3 "$WORK/endless.py"

cat >"$WORK/in.jsonl" <<'EOF'
{"request": {"model": "m", "messages": [{"role": "user", "content": "one"}], "stream": true, "max_tokens": 8}}
{"request": {"model": "m", "messages": [{"role": "user", "content": "two"}], "stream": true, "max_tokens": 8}}
EOF
"$RETRACE" import "$WORK/in.jsonl" --out "$WORK/in.rtrace" 2>"$WORK/import.err" || fail "import failed"

status=0
"$RETRACE" replay "$WORK/in.rtrace" --target "$endless_URL" --out "$WORK/bad.rtrace" -c 1 --max-response-bytes 0 \
  2>"$WORK/bad.err" || status=$?
check_eq "$status" 2 "a bound of 0 is refused"
check_contains "$WORK/bad.err" "--max-response-bytes 0: expected 1 to" "the refusal names the flag and the range"

status=0
/usr/bin/time -f '%M' -o "$WORK/replay.kib" "$RETRACE" replay "$WORK/in.rtrace" --target "$endless_URL" \
  --out "$WORK/run.rtrace" -c 1 --max-response-bytes 2000000 --json >"$WORK/replay.json" 2>"$WORK/replay.err" || status=$?
check_eq "$status" 1 "replay ends, its two exchanges failed"
check_eq "$(jq -r '.errors.truncated' "$WORK/replay.json")" 2 "both exchanges are cut as truncated"
peak_kib=$(tail -1 "$WORK/replay.kib")
echo "replay's peak RSS: $((peak_kib / 1024)) MiB"
# Under the sanitizers RSS holds ASan's shadow memory and its quarantine of freed blocks (247 MiB
# seen, the stream cut all the same): the bound is asserted by the release tier's run of this test.
if [[ "${RETRACE_SANITIZE:-OFF}" != ON ]]; then
  (( peak_kib < 200 * 1024 )) || fail "replay's peak RSS is $((peak_kib / 1024)) MiB: the endless stream was held"
fi

"$RETRACE" export "$WORK/run.rtrace" | jq -c 'select(.exchange) | .exchange' >"$WORK/run.jsonl"
check_eq "$(wc -l <"$WORK/run.jsonl")" 2 "the run holds both exchanges"
check_eq "$(jq -r '.error.kind' "$WORK/run.jsonl" | sort -u)" truncated "each is truncated"
check_contains "$WORK/run.jsonl" "the response passed --max-response-bytes (2000000 bytes)" "the error says why"
# Kept as received up to the bound: the stored events' bytes are at most it, and most of it.
jq -r '[.response.events[].data | length] | add' "$WORK/run.jsonl" >"$WORK/kept"
while read -r kept; do
  (( kept <= 2000000 && kept > 1000000 )) || fail "expected up to 2000000 bytes kept, got $kept"
done <"$WORK/kept"
tokens=$(jq -r '[.choices[0].tokens | length] | add' "$WORK/run.jsonl" | head -1)
(( tokens > 10000 )) || fail "the tokens up to the bound are decoded, got $tokens"

# record: the client's stream ends at the bound, the exchange is written truncated, and the next
# exchange through the proxy is recorded.
start_listening proxy "$RETRACE" record --upstream "$endless_URL" --out "$WORK/rec.rtrace" \
  --listen 127.0.0.1:0 --no-server-info --flush-every 1 --max-response-bytes 2000000
curl_status=0
curl -sN -o "$WORK/client.sse" -H 'content-type: application/json' \
  -d '{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true}' \
  --max-time 120 "$proxy_URL/v1/chat/completions" || curl_status=$?
(( curl_status != 0 && curl_status != 28 )) || fail "the client's stream should end short, not run out the time (curl $curl_status)"
client_bytes=$(stat -c %s "$WORK/client.sse")
(( client_bytes <= 2000000 && client_bytes > 1000000 )) || fail "the client got $client_bytes bytes"
check_eq "$(curl -s -H 'content-type: application/json' -d '{"model":"m","messages":[{"role":"user","content":"hi"}]}' \
  "$proxy_URL/v1/chat/completions" | jq -r '.choices[0].message.content')" short "the proxy goes on"
stop "$proxy_PID" || fail "record did not exit 0"
"$RETRACE" export "$WORK/rec.rtrace" | jq -c 'select(.exchange) | .exchange' >"$WORK/rec.jsonl"
check_eq "$(jq -r '.error.kind' "$WORK/rec.jsonl" | tr '\n' ' ')" "truncated none " "record wrote both exchanges"
check_contains "$WORK/rec.jsonl" "the response passed --max-response-bytes (2000000 bytes)" "record's error says why"

# sweep: the flag is one of the shared replay flags, kept in plan.json for --resume.
status=0
"$RETRACE" sweep "$WORK/in.rtrace" --target "$endless_URL" --concurrency 1 --repeat 1 --limit 1 \
  --max-response-bytes 1000000 --out "$WORK/sweep" >"$WORK/sweep.out" 2>"$WORK/sweep.err" || status=$?
(( status != 2 )) || { cat "$WORK/sweep.err" >&2; fail "sweep refused the flag"; }
check_eq "$(jq -r '.replay.max_response_bytes' "$WORK/sweep/plan.json")" 1000000 "plan.json keeps the bound"
echo "PASS endless_response"
