#!/usr/bin/env bash
# A client that closes its side of the connection in the middle of a request body gets an answer
# from record at once (400, saying how much of the body arrived), as serve gives one, instead of a
# silent close; the exchange is kept as rejected and the proxy goes on. The client waits for the
# answer itself (a blocking read), no sleeps.
. "$(dirname "$0")/lib.sh"

start_listening upstream "$RETRACE" serve --listen 127.0.0.1:0
start_listening proxy "$RETRACE" record --upstream "$upstream_URL" --out "$WORK/cut.rtrace" \
  --listen 127.0.0.1:0 --no-server-info --flush-every 1

cut_body() {  # cut_body URL: sends 10 of 100 body bytes, shuts down its write side, prints the answer
  python3 - "$1" <<'PY'
import socket, sys
host, port = sys.argv[1].replace("http://", "").rsplit(":", 1)
s = socket.create_connection((host, int(port)))
s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
          b"Content-Length: 100\r\n\r\n{\"prompt\":")
s.shutdown(socket.SHUT_WR)
s.settimeout(60)  # a bound on a hang, not a measured time: the answer comes or the socket closes
answer = b""
while True:
    chunk = s.recv(65536)
    if not chunk:
        break
    answer += chunk
sys.stdout.write(answer.decode("utf-8", "replace"))
PY
}

cut_body "$upstream_URL" >"$WORK/serve.answer"
check_contains "$WORK/serve.answer" "HTTP/1.1 400" "serve answers a body cut short"
cut_body "$proxy_URL" >"$WORK/record.answer"
check_contains "$WORK/record.answer" "HTTP/1.1 400" "record answers a body cut short"
check_contains "$WORK/record.answer" "the request body ended after 10 bytes of the 100 its Content-Length gives" \
  "the answer says how much arrived"
check_eq "$(curl -s -o /dev/null -w '%{http_code}' -H 'content-type: application/json' \
  -d '{"prompt":"hi","max_tokens":2}' "$proxy_URL/v1/completions")" 200 "the proxy goes on"
stop "$proxy_PID" || fail "record did not exit 0"

"$RETRACE" export "$WORK/cut.rtrace" >"$WORK/cut.jsonl"
python3 - "$WORK/cut.jsonl" <<'PY' || fail "recorded exchanges"
import json, sys
rows = [json.loads(l)["exchange"] for l in open(sys.argv[1]) if '"exchange"' in l[:20]]
seen = [(e["request"]["target"], e["response"]["status"], e["error"]["kind"]) for e in rows]
assert seen == [("/v1/completions", 400, "rejected"), ("/v1/completions", 200, "none")], seen
assert "ended after 10 bytes" in rows[0]["error"]["message"], rows[0]["error"]
PY
echo "PASS record_cut_body"
