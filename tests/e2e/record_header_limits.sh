# retrace record facing header fields longer than an HTTP field may hold (65,533 bytes in Beast),
# an upstream's under record's 256 KiB header limit is a protocol error (502 to the client,
# recorded as such; one in a chunked body's trailer cuts the relayed response and is recorded with
# the field named), a client's gets 431; the proxy keeps running and keeps what it recorded.
. "$(dirname "$0")/lib.sh"

start_listening faulty python3 "$ROOT/tests/e2e/record_faults_upstream.py"
start_listening proxy "$RETRACE" record --upstream "$faulty_URL" --out "$WORK/headers.rtrace" \
  --listen 127.0.0.1:0 --no-server-info --flush-every 1
P=$proxy_URL

status() { curl -s -o "$WORK/body" -w '%{http_code}' "$@" || true; }

check_eq "$(status "$P/huge-header?n=65534")" 502 "an upstream header value of 65,534 bytes gives 502"
check_contains "$WORK/body" '"type":"upstream_protocol"' "the 502 says protocol"
check_contains "$WORK/body" 'X-Big: its value is 65534 bytes' "the 502 names the field"
check_eq "$(status "$P/huge-header?field=coding&n=240000")" 502 "a Content-Encoding list of 240,000 bytes gives 502"
check_eq "$(status "$P/huge-header?n=65000")" 200 "a header value that fits is relayed"
check_eq "$(status "$P/huge-header?field=trailer&n=70000")" 200 "a trailer too long: its head and body were relayed"
big=$(head -c 70000 /dev/zero | tr '\0' a)
check_eq "$(status -H "X-Big: $big" "$P/ok")" 431 "a client header value of 70,000 bytes gets 431"
check_eq "$(status "$P/ok")" 200 "the proxy is still up"
stop "$proxy_PID" || fail "record did not exit 0"

"$RETRACE" export "$WORK/headers.rtrace" >"$WORK/headers.jsonl"
python3 - "$WORK/headers.jsonl" <<'PY' || fail "recorded exchanges"
import json, sys
rows = [json.loads(l)["exchange"] for l in open(sys.argv[1]) if '"exchange"' in l[:20]]
seen = [(e["request"]["target"].split("?")[0], e["response"]["status"], e["error"]["kind"]) for e in rows]
assert seen == [("/huge-header", 0, "protocol"), ("/huge-header", 0, "protocol"),
                ("/huge-header", 200, "none"), ("/huge-header", 200, "protocol"),
                ("/ok", 431, "rejected"), ("/ok", 200, "none")], seen
assert "65534 bytes, over the 65533" in rows[0]["error"]["message"], rows[0]["error"]
assert rows[3]["error"]["message"].startswith(
    "upstream's response trailer: header field X-Big: its value is 70000 bytes, over the 65533"), rows[3]["error"]
PY
echo "PASS record_header_limits"
