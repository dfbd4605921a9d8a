# retrace record relaying large bodies: every framing (chunked in uneven pieces, Content-Length,
# close-delimited) arrives byte for byte, also at a client slower than the upstream (the relay
# stops reading the upstream while the client is behind, then resumes); a client that stops
# reading altogether is given up after --upstream-timeout and recorded as cut; and what was
# recorded is exactly what was relayed.
. "$(dirname "$0")/lib.sh"

start_listening upstream python3 "$ROOT/tests/e2e/record_faults_upstream.py"
start_listening proxy "$RETRACE" record --upstream "$upstream_URL" --out "$WORK/relay.rtrace" \
  --listen 127.0.0.1:0 --upstream-timeout 3s --no-server-info --flush-every 1
P=$proxy_URL
SIZE=6000000

expected_sha=$(python3 -c "
import hashlib, importlib.util, sys
spec = importlib.util.spec_from_file_location('up', '$ROOT/tests/e2e/record_faults_upstream.py')
up = importlib.util.module_from_spec(spec); spec.loader.exec_module(up)
print(hashlib.sha256(up.pattern($SIZE)).hexdigest())")

for framing in chunked length eof; do
  curl -sS --max-time 20 -o "$WORK/$framing.bin" "$P/big?n=$SIZE&framing=$framing" ||
    fail "curl could not fetch the $framing body through the proxy"
  check_eq "$(sha256sum <"$WORK/$framing.bin" | cut -d' ' -f1)" "$expected_sha" "$framing body relayed byte for byte"
done

# A client reading at 12 MB/s while the upstream writes as fast as loopback allows: the relay
# holds at most its pending limit and resumes; nothing is lost or reordered.
curl -sS --max-time 20 --limit-rate 12M -o "$WORK/slow.bin" "$P/big?n=$SIZE&framing=chunked&slow=1" ||
  fail "curl could not fetch the body at a limited rate"
check_eq "$(sha256sum <"$WORK/slow.bin" | cut -d' ' -f1)" "$expected_sha" "body relayed intact to a slow client"

# A client that sends its request and then reads nothing: given up after --upstream-timeout (3 s;
# 1 s let a Python upstream slowed by a loaded machine miss the header's deadline once). The client
# reads only once the exchange is in the trace as cut (--flush-every 1), so no sleep guesses when.
python3 - "${P##*:}" "$RETRACE" "$WORK/relay.rtrace" <<'EOF' || fail "stalled client"
import socket, subprocess, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.sendall(b"GET /big?n=60000000&framing=length&stalled=1 HTTP/1.1\r\nHost: x\r\n\r\n")
deadline = time.monotonic() + 60
while b"stalled=1" not in subprocess.run([sys.argv[2], "cat", sys.argv[3]], capture_output=True).stdout:
    assert time.monotonic() < deadline, "the stalled exchange never reached the trace"
    time.sleep(0.2)
# The proxy has given the client up and closed: reading drains what was buffered, then ends.
s.settimeout(10)
got = 0
try:
    while True:
        data = s.recv(1 << 20)
        if not data:
            break
        got += len(data)
except (ConnectionResetError, socket.timeout):
    pass
assert got < 60000000, f"the stalled client got the whole body ({got} bytes)"
EOF

check_eq "$(curl -s -o /dev/null -w '%{http_code}' "$P/ok")" 200 "the proxy is still up"
stop "$proxy_PID" || fail "record did not exit 0"

"$RETRACE" export "$WORK/relay.rtrace" >"$WORK/relay.jsonl"
python3 - "$WORK/relay.jsonl" "$SIZE" "$expected_sha" <<'EOF' || fail "recorded exchanges"
import hashlib, json, sys
size, sha = int(sys.argv[2]), sys.argv[3]
by_target = {}
for line in open(sys.argv[1]):
    record = json.loads(line)
    if "exchange" in record:
        by_target[record["exchange"]["request"]["target"]] = record["exchange"]
for framing in ["chunked", "length", "eof"]:
    e = by_target[f"/big?n={size}&framing={framing}"]
    assert e["error"]["kind"] == "none", (framing, e["error"])
    body = e["response"]["body"].encode("latin-1")
    assert len(body) == size and hashlib.sha256(body).hexdigest() == sha, (framing, len(body))
stalled = by_target["/big?n=60000000&framing=length&stalled=1"]
assert stalled["error"]["kind"] == "cut", stalled["error"]
assert "client" in stalled["error"]["message"], stalled["error"]
EOF
echo "PASS record_relay"
