# Compressed responses through a real nginx with gzip on, in front of `retrace serve`:
# `retrace record` passes its client the bytes nginx sent (gzip stays gzip) and stores them
# decoded, streamed and not, with `curl --compressed` and without; `retrace cat` and `export` show
# the text and tokens; `retrace replay` against nginx decodes what it receives (tokens and TTFT).
# An upstream whose gzip is corrupt: the client still gets its bytes, the trace keeps them as
# received and says why.
. "$(dirname "$0")/lib.sh"

if ! command -v nginx >/dev/null; then
  [[ "${CI:-}" == true ]] && fail "nginx is not installed (scripts/deps.sh installs nginx-light)"
  echo "SKIP: nginx is not installed (scripts/deps.sh installs nginx-light)" >&2
  exit 77
fi

start_listening serve "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off

# nginx as the current user, everything under $WORK/nginx, in the foreground (killed at exit).
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
NGINX_PORT=$(free_port)
N=$WORK/nginx
mkdir -p "$N/tmp"
user_line=""
[[ $(id -u) == 0 ]] && user_line="user $(id -un) $(id -gn);"
cat >"$N/nginx.conf" <<EOF
$user_line
worker_processes 1;
daemon off;
pid $N/nginx.pid;
error_log $N/error.log warn;
events { worker_connections 256; }
http {
  access_log off;
  client_body_temp_path $N/tmp/body;
  proxy_temp_path $N/tmp/proxy;
  fastcgi_temp_path $N/tmp/fastcgi;
  uwsgi_temp_path $N/tmp/uwsgi;
  scgi_temp_path $N/tmp/scgi;
  gzip on;
  gzip_types application/json text/event-stream;
  gzip_proxied any;
  server {
    listen 127.0.0.1:$NGINX_PORT;
    location / {
      proxy_pass ${serve_URL};
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
    }
  }
}
EOF
nginx -p "$N" -c "$N/nginx.conf" -e "$N/error.log" >"$WORK/nginx.out" 2>"$WORK/nginx.err" &
_PIDS+=("$!")
NGINX_PID=$!
for i in $(seq 1 300); do
  (exec 3<>"/dev/tcp/127.0.0.1/$NGINX_PORT") 2>/dev/null && break
  kill -0 "$NGINX_PID" 2>/dev/null || { cat "$WORK/nginx.err" "$N/error.log" >&2; fail "nginx exited before listening"; }
  sleep 0.1
done
NGINX=http://127.0.0.1:$NGINX_PORT

start_listening proxy "$RETRACE" record --upstream "$NGINX" --out "$WORK/rec.rtrace" \
  --listen 127.0.0.1:0 --no-server-info --flush-every 1
P=$proxy_URL

completion() {  # PROMPT STREAM
  printf '{"model":"retrace-sim","prompt":"%s","max_tokens":24,"temperature":0,"stream":%s}' "$1" "$2"
}

# What the client gets: with Accept-Encoding (curl --compressed), nginx's gzip, byte for byte;
# curl --compressed decodes it. Kept raw too (the same request, gzip asked for by hand).
curl -sS --compressed -D "$WORK/plain.h" -o "$WORK/plain.json" "$P/v1/completions" \
  -H 'Content-Type: application/json' -d "$(completion 'compressed body' false)"
check_contains "$WORK/plain.h" "Content-Encoding: gzip" "nginx compressed the non-streamed response"
python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$WORK/plain.json" ||
  fail "the client's non-streamed body does not decompress to JSON"
curl -sS -N --compressed -D "$WORK/stream.h" -o "$WORK/stream.sse" "$P/v1/completions" \
  -H 'Content-Type: application/json' -d "$(completion 'compressed stream' true)"
check_contains "$WORK/stream.h" "Content-Encoding: gzip" "nginx compressed the stream"
check_contains "$WORK/stream.sse" "data: [DONE]" "the client's stream decompresses to the events"
curl -sS -N -H 'Accept-Encoding: gzip' -o "$WORK/raw.gz" "$P/v1/completions" \
  -H 'Content-Type: application/json' -d "$(completion 'raw gzip' true)"
gzip -dc <"$WORK/raw.gz" >"$WORK/raw.sse" || fail "the client's gzip bytes are not valid gzip"
# Without Accept-Encoding nginx sends identity, and so does record.
curl -sS -D "$WORK/identity.h" -o "$WORK/identity.json" "$P/v1/completions" \
  -H 'Content-Type: application/json' -d "$(completion 'identity body' false)"
curl -sS -N -o "$WORK/identity.sse" "$P/v1/completions" \
  -H 'Content-Type: application/json' -d "$(completion 'identity stream' true)"
grep -qi "content-encoding" "$WORK/identity.h" && fail "a response to a request without Accept-Encoding was compressed"

stop "$proxy_PID" || fail "record did not exit 0"

"$RETRACE" export "$WORK/rec.rtrace" >"$WORK/rec.jsonl"
python3 - "$WORK" <<'EOF' || fail "the recorded trace"
import json, sys
work = sys.argv[1]
exchanges = [json.loads(l)["exchange"] for l in open(f"{work}/rec.jsonl") if '"exchange"' in l]
by_prompt = {json.loads(e["request"]["body"])["prompt"]: e for e in exchanges}
assert len(by_prompt) == 5, sorted(by_prompt)

def header(e, name):
    return next((value for key, value in e["response"]["headers"] if key.lower() == name), None)

def stored(e):
    r = e["response"]
    return "".join(ev["data"] for ev in r["events"]) if r["streamed"] else r["body"]

for prompt, e in by_prompt.items():
    coded = prompt in ("compressed body", "compressed stream", "raw gzip")
    assert header(e, "content-encoding") == ("gzip" if coded else None), (prompt, e["response"]["headers"])
    assert e["decode_note"] == "", (prompt, e["decode_note"])
    assert e["error"]["kind"] == "none", (prompt, e["error"])
    assert e["choices"] and e["choices"][0]["tokens"], (prompt, "no tokens")
    streamed = "stream" in prompt or prompt == "raw gzip"
    assert e["response"]["streamed"] == streamed, prompt
    if streamed:
        assert len(e["response"]["events"]) > 2, (prompt, len(e["response"]["events"]))
        assert stored(e).endswith("data: [DONE]\n\n"), prompt
    else:
        json.loads(stored(e))

# The client's bytes decompress to exactly what the trace stores decoded.
for prompt, path in [("compressed body", "plain.json"), ("compressed stream", "stream.sse"),
                     ("raw gzip", "raw.sse"), ("identity body", "identity.json"),
                     ("identity stream", "identity.sse")]:
    client = open(f"{work}/{path}", encoding="utf-8").read()
    assert client == stored(by_prompt[prompt]), (prompt, client[:200], stored(by_prompt[prompt])[:200])
EOF

"$RETRACE" cat "$WORK/rec.rtrace" >"$WORK/cat.txt"
text=$(python3 -c "
import json
for l in open('$WORK/rec.jsonl'):
    if '\"exchange\"' in l:
        e = json.loads(l)['exchange']
        if json.loads(e['request']['body'])['prompt'] == 'compressed stream':
            print(''.join(t['bytes'] for t in e['choices'][0]['tokens']))")
[[ -n "$text" ]] || fail "no text decoded for the compressed stream"
check_contains "$WORK/cat.txt" "${text:0:20}" "retrace cat shows the decoded text of the compressed stream"
grep -q "not JSON\|end marker" "$WORK/cat.txt" && fail "retrace cat shows a decoding failure"

# Replay against nginx: Accept-Encoding as recorded, so the recorded compressed requests come back
# compressed and are decoded; the others come back identity.
"$RETRACE" replay "$WORK/rec.rtrace" --target "$NGINX" --out "$WORK/rep.rtrace" -c 2 \
  >"$WORK/replay.out" 2>"$WORK/replay.err" || { cat "$WORK/replay.err" >&2; fail "replay against nginx failed"; }
"$RETRACE" export "$WORK/rep.rtrace" >"$WORK/rep.jsonl"
python3 - "$WORK/rep.jsonl" <<'EOF' || fail "the replayed trace"
import json, sys
exchanges = [json.loads(l)["exchange"] for l in open(sys.argv[1]) if '"exchange"' in l]
assert len(exchanges) == 5, len(exchanges)
coded = 0
for e in exchanges:
    prompt = json.loads(e["request"]["body"])["prompt"]
    encoding = next((v for k, v in e["response"]["headers"] if k.lower() == "content-encoding"), None)
    sent = next((v for k, v in e["request"]["headers"] if k.lower() == "accept-encoding"), None)
    assert (encoding == "gzip") == (sent is not None), (prompt, sent, encoding)
    coded += encoding == "gzip"
    assert e["error"]["kind"] == "none", (prompt, e["error"])
    assert e["decode_note"] == "", (prompt, e["decode_note"])
    assert e["choices"] and e["choices"][0]["tokens"], (prompt, "no tokens")
    assert e["first_byte_ns"] > 0, prompt
    if e["response"]["streamed"]:
        assert "".join(ev["data"] for ev in e["response"]["events"]).endswith("data: [DONE]\n\n"), prompt
assert coded == 3, coded
EOF
"$RETRACE" stats "$WORK/rep.rtrace" --json >"$WORK/stats.json"
python3 - "$WORK/stats.json" <<'EOF' || fail "replay stats"
import json, sys
stats = json.load(open(sys.argv[1]))
ttft = next((v for k, v in stats.items() if k.startswith("ttft")), None)
# Every streamed exchange has a TTFT, the two compressed ones included.
assert ttft and ttft["count"] >= 3, ttft
EOF

# An upstream whose gzip stream breaks after its first event.
cat >"$WORK/corrupt_upstream.py" <<'EOF'
import gzip, http.server, zlib
from loopback_http import reply, serve
class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        z = zlib.compressobj(6, zlib.DEFLATED, 31)
        first = z.compress(b'data: {"choices":[{"index":0,"text":"Hel","finish_reason":null}]}\n\n')
        first += z.flush(zlib.Z_SYNC_FLUSH)
        body = first + b"\x00\xffthis is not deflate data\xff\x00"
        reply(self, 200, "text/event-stream", body, [("Content-Encoding", "gzip")])
    def log_message(self, *args):
        pass
# Threads: record keeps its upstream connection alive while the test also asks directly.
serve(Handler)
EOF
start_listening corrupt python3 "$WORK/corrupt_upstream.py"
start_listening proxy2 "$RETRACE" record --upstream "$corrupt_URL" --out "$WORK/corrupt.rtrace" \
  --listen 127.0.0.1:0 --no-server-info --flush-every 1
curl -sS -H 'Accept-Encoding: gzip' -o "$WORK/corrupt.client" "$proxy2_URL/v1/completions" \
  -H 'Content-Type: application/json' -d "$(completion 'corrupt' true)"
curl -sS -H 'Accept-Encoding: gzip' -o "$WORK/corrupt.direct" "$corrupt_URL/v1/completions" \
  -H 'Content-Type: application/json' -d "$(completion 'corrupt' true)"
cmp -s "$WORK/corrupt.client" "$WORK/corrupt.direct" || fail "the client did not get the upstream's corrupt bytes as sent"
stop "$proxy2_PID" || fail "record (corrupt upstream) did not exit 0"
"$RETRACE" export "$WORK/corrupt.rtrace" >"$WORK/corrupt.jsonl"
python3 - "$WORK/corrupt.jsonl" "$WORK/corrupt.direct" <<'EOF' || fail "the corrupt exchange"
import base64, json, sys
e = next(json.loads(l)["exchange"] for l in open(sys.argv[1]) if '"exchange"' in l)
raw = open(sys.argv[2], "rb").read()
def data(d):  # export writes bytes that are not UTF-8 as {"base64": ...}
    return base64.b64decode(d["base64"]) if isinstance(d, dict) else d.encode("utf-8")
stored = b"".join(data(ev["data"]) for ev in e["response"]["events"])
assert stored == raw, (stored[:80], raw[:80])
note = e["decode_note"]
assert note.startswith("Content-Encoding gzip: corrupt gzip data at byte"), note
assert "the stored body is the bytes as received, not decoded" in note, note
assert "".join(t["bytes"] for t in e["choices"][0]["tokens"]) == "Hel", e["choices"]
EOF

echo "PASS content_coding"
