# `retrace replay` stores a streamed answer's events byte for byte whether the upstream sends it
# chunked (chunks cut across events) or with a Content-Length, for events of 1 B to 200 KB: the
# identity streams held raw that decode_arrived frames where they arrived and whose events adopt
# the body's buffer (a worker's later streams, reserved like its last: the second and third of
# each kind here), and the first, copied as before. The decoder saw every event: the tokens' text
# is the events' text. tests/arrived_events_test checks the same per read cut, in process.
. "$(dirname "$0")/lib.sh"

cat >"$WORK/events.py" <<'PY'
import http.server, json, sys
from loopback_http import reply, serve

def event(text):
    return ('data: {"id":"c","object":"text_completion","choices":[{"index":0,"text":"%s",'
            '"finish_reason":null}]}\n\n' % text).encode()

def texts(kind):
    """The texts of a stream's events: 1 B doubling to 64 KiB, or one of 200 KB among small ones."""
    if kind.startswith("big"):
        return ["s%d" % n for n in range(50)] + ["b" * 200_000] + ["t%d" % n for n in range(50)]
    return [chr(ord("a") + n) * (1 << n) for n in range(17)]

def body(kind):
    return b"".join(event(text) for text in texts(kind)) + b"data: [DONE]\n\n"

class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        reply(self, 200, "application/json",
              json.dumps({"object": "list", "data": [{"id": "m", "object": "model"}]}).encode())
    def do_POST(self):
        kind = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))["prompt"]
        data = body(kind)
        if kind.endswith("length"):
            reply(self, 200, "text/event-stream", data)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        at, size = 0, 1
        while at < len(data):  # chunks of 1 B growing by 7/4 to ~32 KiB, cut anywhere in events
            piece = data[at:at + size]
            self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            self.wfile.flush()
            at += len(piece)
            size = min(size * 7 // 4 + 1, 32 << 10)
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()
    def log_message(self, *args):
        pass

if __name__ == "__main__" and sys.argv[1:2] == ["--expect"]:
    print(json.dumps({kind: {"body": body(kind).decode(), "text": "".join(texts(kind))}
                      for kind in ("chunked", "length", "big-chunked", "big-length")}))
else:
    serve(Handler)
PY
start_listening events python3 "$WORK/events.py"

for kind in chunked length big-chunked big-length; do
  for n in 1 2 3; do
    echo "{\"request\": {\"model\": \"m\", \"prompt\": \"$kind\", \"stream\": true, \"max_tokens\": 8}}"
  done
done >"$WORK/in.jsonl"
"$RETRACE" import "$WORK/in.jsonl" --endpoint completions --out "$WORK/in.rtrace" 2>"$WORK/import.err" ||
  { cat "$WORK/import.err" >&2; fail "import failed"; }
"$RETRACE" replay "$WORK/in.rtrace" --target "$events_URL" --out "$WORK/run.rtrace" -c 1 --json \
  >"$WORK/replay.json" 2>"$WORK/replay.err" || { cat "$WORK/replay.err" >&2; fail "replay failed"; }
check_eq "$(jq -r '.errors | add // 0' "$WORK/replay.json")" 0 "no exchange failed"

python3 "$WORK/events.py" --expect >"$WORK/expect.json"
"$RETRACE" export "$WORK/run.rtrace" | jq -c 'select(.exchange) | .exchange' >"$WORK/run.jsonl"
python3 - "$WORK/expect.json" "$WORK/run.jsonl" <<'PY'
import json, sys
expect = json.load(open(sys.argv[1]))
seen = {}
for line in open(sys.argv[2]):
    exchange = json.loads(line)
    kind = json.loads(exchange["request"]["body"])["prompt"]
    events = exchange["response"]["events"]
    stored = "".join(event["data"] for event in events)
    assert stored == expect[kind]["body"], "%s: the stored events are not the body sent (%d bytes against %d)" % (
        kind, len(stored), len(expect[kind]["body"]))
    assert all(event["data"].endswith("\n\n") for event in events), "%s: an event not cut at its blank line" % kind
    text = "".join(token.get("bytes") or "" for choice in exchange.get("choices", []) for token in choice["tokens"])
    assert text == expect[kind]["text"], "%s: the tokens' text is not the events' (%d bytes against %d)" % (
        kind, len(text), len(expect[kind]["text"]))
    seen[kind] = seen.get(kind, 0) + 1
assert seen == {kind: 3 for kind in expect}, "exchanges by kind: %s" % seen
PY
echo ok
