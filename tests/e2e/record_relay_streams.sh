# retrace record relaying thousands of event streams of growing size from `retrace serve`: every
# client gets exactly the bytes record kept for its exchange (the body as the upstream sent it),
# in order, whether the relay sends a read at once from its read buffer or queues it behind a
# client that is behind. 2,000 streams of 1 to 125 tokens at 32 at once (every third with
# logprobs), and 4 streams of 3,000 tokens read by clients that take 4 KiB at a time through a
# 4 KiB receive buffer.
. "$(dirname "$0")/lib.sh"

start_listening serve "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off
start_listening proxy "$RETRACE" record --upstream "$serve_URL" --out "$WORK/streams.rtrace" \
  --listen 127.0.0.1:0 --no-server-info
P=${proxy_URL##*:}

python3 - "$P" "$WORK/got.json" <<'EOF' || fail "the streams through the relay"
import concurrent.futures, hashlib, http.client, json, socket, sys, time
port, out = int(sys.argv[1]), sys.argv[2]

def request(i, tokens, slow):
    body = json.dumps({"model": "retrace-sim", "prompt": f"stream {i}", "max_tokens": tokens,
                       "temperature": 0, "stream": True, "ignore_eos": True,
                       **({"logprobs": 2} if i % 3 == 0 else {})})
    s = socket.socket()
    if slow:  # before connect, so that the window stays small
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.settimeout(60)
    s.connect(("127.0.0.1", port))
    conn = http.client.HTTPConnection("127.0.0.1", port)
    conn.sock = s
    conn.request("POST", "/v1/completions", body, {"Content-Type": "application/json"})
    response = conn.getresponse()
    assert response.status == 200, (i, response.status)
    got = bytearray()
    while True:
        piece = response.read(4096) if slow else response.read()
        if not piece:
            break
        got += piece
        if slow:
            time.sleep(0.0005)  # a reader slower than the relay: pacing, not a wait for an event
    conn.close()
    text = got.decode()
    events = [e for e in text.split("\n\n") if e]
    assert events[-1] == "data: [DONE]", (i, events[-1][-200:])
    offsets = [json.loads(e[6:])["choices"][0]["logprobs"]["text_offset"][0] for e in events[:-1]
               if "logprobs" in e and json.loads(e[6:])["choices"][0].get("logprobs")]
    assert offsets == sorted(offsets), (i, "events out of order")
    assert len(events) - 1 >= tokens, (i, len(events), tokens)
    return f"stream {i}", hashlib.sha256(got).hexdigest(), len(got)

jobs = [(i, 1 + i // 16, False) for i in range(2000)] + [(2000 + i, 3000, True) for i in range(4)]
with concurrent.futures.ThreadPoolExecutor(32) as pool:
    results = list(pool.map(lambda job: request(*job), jobs))
json.dump({prompt: [sha, size] for prompt, sha, size in results}, open(out, "w"))
print(f"{len(results)} streams, {sum(size for _, _, size in results)} bytes", file=sys.stderr)
EOF

stop "$proxy_PID" || fail "record did not exit 0"
"$RETRACE" export "$WORK/streams.rtrace" >"$WORK/streams.jsonl"
python3 - "$WORK/streams.jsonl" "$WORK/got.json" <<'EOF' || fail "what record kept is what the clients got"
import hashlib, json, sys
got = json.load(open(sys.argv[2]))
seen = 0
for line in open(sys.argv[1]):
    record = json.loads(line)
    if "exchange" not in record:
        continue
    e = record["exchange"]
    prompt = json.loads(e["request"]["body"])["prompt"]
    assert e["error"]["kind"] == "none", (prompt, e["error"])
    kept = "".join(event["data"] for event in e["response"]["events"]).encode()
    sha, size = got[prompt]
    assert (hashlib.sha256(kept).hexdigest(), len(kept)) == (sha, size), (prompt, len(kept), size)
    seen += 1
assert seen == len(got) == 2004, (seen, len(got))
EOF
echo "PASS record_relay_streams"
