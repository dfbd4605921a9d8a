# An SSE bomb through `retrace replay`: a server answers a streamed chat request with a gzip'd body
# of a few KiB that decodes to 30,000,000 comment events (":\n\n", 90 MB). One Event each would
# cost gigabytes; the decode limit counts events' bookkeeping with their bytes, so the replay
# stops decoding at it, stores the stream as received with a note that says why, counts the
# exchange as failed (truncated: no end marker), and stays within a bounded peak RSS (523 MiB
# measured; before, the events alone took 1.2 GB and their vector's growth as much again).
. "$(dirname "$0")/lib.sh"

cat >"$WORK/bomb.py" <<'PY'
import gzip, http.server, json
from loopback_http import reply, serve
member = gzip.compress(b":\n\n" * 1_000_000, 9)
body = member * 30  # concatenated gzip members decode as one body
class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def reply(self, status, content_type, data, coding=None):
        reply(self, status, content_type, data, [("Content-Encoding", coding)] if coding else [])
    def do_GET(self):
        if self.path.startswith("/v1/models"):
            self.reply(200, "application/json", json.dumps({"object": "list", "data": [{"id": "m", "object": "model"}]}).encode())
        else:
            self.reply(404, "text/plain", b"not found")
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.reply(200, "text/event-stream", body, "gzip")
    def log_message(self, *args):
        pass
serve(Handler)
PY
start_listening bomb python3 "$WORK/bomb.py"

echo '{"request": {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": true, "max_tokens": 8}}' \
  >"$WORK/in.jsonl"
"$RETRACE" import "$WORK/in.jsonl" --out "$WORK/in.rtrace" 2>"$WORK/import.err" || fail "import failed"

status=0
/usr/bin/time -f '%M' -o "$WORK/replay.kib" "$RETRACE" replay "$WORK/in.rtrace" --target "$bomb_URL" \
  --out "$WORK/run.rtrace" -c 1 --json >"$WORK/replay.json" 2>"$WORK/replay.err" || status=$?
[[ $status == 0 || $status == 1 ]] || { cat "$WORK/replay.err" >&2; fail "replay exited $status"; }
check_eq "$(jq -r '.errors.truncated' "$WORK/replay.json")" 1 \
  "the exchange is a failure (a stream without its end marker), counted as such"
peak_kib=$(tail -1 "$WORK/replay.kib")
echo "replay's peak RSS: $((peak_kib / 1024)) MiB"
(( peak_kib < 1024 * 1024 )) || fail "replay's peak RSS is $((peak_kib / 1024)) MiB: the bomb's events were held"

"$RETRACE" export "$WORK/run.rtrace" | jq -c 'select(.exchange) | .exchange' >"$WORK/run.jsonl"
check_eq "$(wc -l <"$WORK/run.jsonl")" 1 "the run holds the exchange"
check_contains "$WORK/run.jsonl" "bytes with its events' bookkeeping; the stored events are the bytes as received" \
  "the decode note says why the stream is stored as received"
check_eq "$(jq -r '.response.status' "$WORK/run.jsonl")" 200 "the response's status is kept"
check_eq "$(jq -r '.decode_note | contains("inside the gzip stream")' "$WORK/run.jsonl")" false \
  "the note does not blame the gzip stream, which was not fed to its end"
events=$(jq -r '.response.events | length' "$WORK/run.jsonl")
(( events >= 1 && events < 1000 )) || fail "expected the reads as received, got $events events"
echo ok
