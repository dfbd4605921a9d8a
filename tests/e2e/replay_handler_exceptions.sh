#!/usr/bin/env bash
# An exception inside one of replay's exchanges costs that exchange, never its slot or the run
# (#34 item 1). A real input throws one: a chunked answer whose trailer holds a 70,000-byte field
# value, which Beast's fields cannot store (std::length_error, "field value too large", thrown
# from inside the read). The exchange is recorded as a protocol error with that message; the slot
# goes on to the next request and the run ends (before, the exchange's idle watchdog stayed
# armed for ever and the run never ended), both with one closed-loop slot (-c 1: a dead slot
# would send nothing more) and open loop (--rate: each request its own detached coroutine).
. "$(dirname "$0")/lib.sh"

cat >"$WORK/trailer.py" <<'PY'
import http.server, json
from loopback_http import reply, serve
ANSWER = json.dumps({"id": "c", "object": "chat.completion", "model": "m",
                     "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"},
                                  "finish_reason": "stop"}],
                     "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}).encode()
class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        if self.path.startswith("/v1/models"):
            reply(self, 200, "application/json", json.dumps({"object": "list", "data": [{"id": "m", "object": "model"}]}).encode())
        else:
            reply(self, 404, "text/plain", b"not found")
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if b"trailer" not in body:
            return reply(self, 200, "application/json", ANSWER)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Trailer", "X-Trailer")
        self.end_headers()
        self.wfile.write(b"%x\r\n%s\r\n0\r\nX-Trailer: %s\r\n\r\n" % (len(ANSWER), ANSWER, b"a" * 70000))
        self.wfile.flush()
    def log_message(self, *args):
        pass
serve(Handler)
PY
start_listening UP python3 "$WORK/trailer.py"

for i in 0 1 2 3 4 5; do
  prompt="question $i"
  [[ $i == 1 ]] && prompt="question $i, answered with a trailer"
  echo "{\"request\": {\"model\": \"m\", \"messages\": [{\"role\": \"user\", \"content\": \"$prompt\"}], \"max_tokens\": 4}}"
done >"$WORK/in.jsonl"
"$RETRACE" import "$WORK/in.jsonl" --out "$WORK/in.rtrace" 2>"$WORK/import.err" || fail "import failed"

# replay_to NAME FLAGS...: replays the six requests; a run that does not end is a failure (the
# bound only turns a hang into one: the run takes well under a second).
replay_to() {
  local name=$1 status=0; shift
  timeout 120 "$RETRACE" replay "$WORK/in.rtrace" --target "$UP_URL" --out "$WORK/$name.rtrace" \
    --json "$@" >"$WORK/$name.json" 2>"$WORK/$name.err" || status=$?
  [[ $status != 124 ]] || fail "$name: the run never ended (stopped after 120 s)"
  [[ $status == 1 ]] || { cat "$WORK/$name.err" >&2; fail "$name: replay exited $status, expected 1 (a request failed)"; }
  "$RETRACE" export "$WORK/$name.rtrace" | jq -c 'select(.exchange) | .exchange' >"$WORK/$name.jsonl"
  check_eq "$(wc -l <"$WORK/$name.jsonl")" 6 "$name: every request is in the run"
  check_eq "$(jq -r 'select(.error.kind == null or .error.kind == "none") | .response.status' "$WORK/$name.jsonl" | sort | uniq -c | awk '{print $1 "x" $2}')" \
    "5x200" "$name: the other five requests completed"
  local failed
  failed=$(jq -c 'select(.error.kind != null and .error.kind != "none")' "$WORK/$name.jsonl")
  check_eq "$(jq -r '.error.kind' <<<"$failed")" protocol "$name: the trailer's exchange is a protocol error"
  check_eq "$(jq -r '.error.message' <<<"$failed")" \
    "retrace could not complete this exchange: field value too large" "$name: its message"
  check_eq "$(jq -r '.request.body | fromjson | .messages[0].content' <<<"$failed")" \
    "question 1, answered with a trailer" "$name: the failed exchange is the trailer's request"
  check_eq "$(jq -r '.errors.protocol' "$WORK/$name.json")" 1 "$name: the summary counts it"
}

replay_to closed -c 1
replay_to open --rate 50
echo ok
