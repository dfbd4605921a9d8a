# retrace record and responses that are not one-request-one-response on the wire: a client's
# `Expect: 100-continue`, interim 1xx responses from the upstream, and a HEAD answered with a body.
# Each client must get its own response, the next request on the same pooled upstream connection
# must get its own, and the trace must pair every request with its own output.
. "$(dirname "$0")/lib.sh"

# --- against a misbehaving upstream: interim responses, and HEAD answered with a body ----------
start_listening faulty python3 "$ROOT/tests/e2e/record_faults_upstream.py"
start_listening proxy "$RETRACE" record --upstream "$faulty_URL" --out "$WORK/faulty.rtrace" \
  --listen 127.0.0.1:0 --no-server-info --flush-every 1
P=$proxy_URL

# One curl, one client connection (so one proxy worker and its one upstream pool), in order.
curl -sS --max-time 20 \
  -o "$WORK/1" -w '%{http_code}\n' -I "$P/first-head" \
  --next -o "$WORK/2" -w '%{http_code}\n' "$P/after-head" \
  --next -o "$WORK/3" -w '%{http_code}\n' -d '{}' "$P/interim" \
  --next -o "$WORK/4" -w '%{http_code}\n' "$P/after-interim" \
  --next -o "$WORK/5" -w '%{http_code}\n' -H 'Expect: 100-continue' -d '{"x":1}' "$P/with-expect" \
  --next -o "$WORK/6" -w '%{http_code}\n' "$P/after-expect" >"$WORK/codes" || fail "curl failed"
check_eq "$(tr '\n' ' ' <"$WORK/codes")" "405 200 200 200 200 200 " "status of each request"
check_contains "$WORK/2" '"path": "/after-head"' "the request after a HEAD gets its own response"
check_contains "$WORK/3" '"path": "/interim"' "interim responses are skipped, the real one relayed"
check_contains "$WORK/4" '"path": "/after-interim"' "the request after interim responses gets its own"
check_contains "$WORK/5" '"path": "/with-expect"' "an Expect: 100-continue request gets its response"
check_contains "$WORK/6" '"path": "/after-expect"' "the request after Expect gets its own response"
check "the proxy does not forward Expect upstream" test "$(jq '.headers | index("expect")' "$WORK/5")" = null

# Hop-by-hop fields, and those the client's Connection header names, stay on the client's side.
curl -sS --max-time 20 -o "$WORK/hop" -H 'Connection: keep-alive, X-Hop' -H 'X-Hop: 1' \
  -H 'X-Keep: 2' -H 'TE: trailers' "$P/hop" || fail "curl failed"
check_eq "$(jq -c '[.headers[] | select(. == "x-hop" or . == "te" or . == "connection" or . == "x-keep")]' "$WORK/hop")" \
  '["x-keep"]' "only the end-to-end header reaches the upstream"

stop "$proxy_PID"
"$RETRACE" export "$WORK/faulty.rtrace" | jq -c 'select(.exchange) | .exchange' >"$WORK/faulty.jsonl"
check_eq "$(wc -l <"$WORK/faulty.jsonl" | tr -d ' ')" 7 "every exchange recorded"
# Each recorded exchange pairs its request target with the body the upstream sent for that target.
jq -r 'select(.request.method != "HEAD")
       | [.request.target, (.response.body | fromjson | .path)] | @tsv' "$WORK/faulty.jsonl" \
  >"$WORK/pairs"
while IFS=$'\t' read -r target answered; do
  check_eq "$answered" "$target" "the trace pairs $target with its own response"
done <"$WORK/pairs"
check_eq "$(wc -l <"$WORK/pairs" | tr -d ' ')" 6 "six non-HEAD exchanges paired"

# --- against retrace serve, which answers Expect: 100-continue itself, and HEAD --------------
start_listening sim "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off
start_listening proxy2 "$RETRACE" record --upstream "$sim_URL" --out "$WORK/sim.rtrace" \
  --listen 127.0.0.1:0 --no-server-info --flush-every 1
body() { printf '{"model":"retrace-sim","prompt":"%s","max_tokens":8,"temperature":0}' "$1"; }
for prompt in alpha bravo; do
  curl -s --max-time 20 "$sim_URL/v1/completions" -H 'content-type: application/json' \
    -d "$(body $prompt)" | jq -r '.choices[0].text' >"$WORK/direct-$prompt"
done
curl -sS --max-time 20 \
  -o "$WORK/s1" -w '%{http_code}\n' -H 'content-type: application/json' \
     -H 'Expect: 100-continue' -d "$(body alpha)" "$proxy2_URL/v1/completions" \
  --next -o "$WORK/s2" -w '%{http_code}\n' -H 'content-type: application/json' \
     -d "$(body bravo)" "$proxy2_URL/v1/completions" \
  --next -o "$WORK/s3" -w '%{http_code}\n' -I "$proxy2_URL/v1/models" \
  --next -o "$WORK/s4" -w '%{http_code}\n' -H 'content-type: application/json' \
     -d "$(body alpha)" "$proxy2_URL/v1/completions" >"$WORK/scodes" || fail "curl through record failed"
check_eq "$(tr '\n' ' ' <"$WORK/scodes")" "200 200 405 200 " "status of each request to serve"
check_eq "$(jq -r '.choices[0].text' "$WORK/s1")" "$(cat "$WORK/direct-alpha")" "Expect request: own answer"
check_eq "$(jq -r '.choices[0].text' "$WORK/s2")" "$(cat "$WORK/direct-bravo")" "next request: own answer"
check_eq "$(jq -r '.choices[0].text' "$WORK/s4")" "$(cat "$WORK/direct-alpha")" "request after HEAD: own answer"
# serve answers HEAD with headers only.
head_response=$(printf 'HEAD /v1/models HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n' |
  timeout 10 python3 -c '
import socket, sys
host, port = sys.argv[1].split("//")[1].split(":")
s = socket.create_connection((host, int(port)))
s.sendall(sys.stdin.buffer.read())
data = b""
while True:
    more = s.recv(65536)
    if not more: break
    data += more
sys.stdout.write(str(len(data.partition(b"\r\n\r\n")[2])))' "$sim_URL")
check_eq "$head_response" 0 "serve sends no body after the header of a HEAD response"

stop "$proxy2_PID"
"$RETRACE" export "$WORK/sim.rtrace" | jq -c 'select(.exchange) | .exchange' >"$WORK/sim.jsonl"
jq -r 'select(.request.method == "POST")
       | [(.request.body | fromjson | .prompt), (.response.body | fromjson | .choices[0].text)]
       | @tsv' "$WORK/sim.jsonl" >"$WORK/sim-pairs"
check_eq "$(wc -l <"$WORK/sim-pairs" | tr -d ' ')" 3 "three completions recorded"
while IFS=$'\t' read -r prompt text; do
  check_eq "$text" "$(cat "$WORK/direct-$prompt")" "the trace pairs prompt $prompt with its own answer"
done <"$WORK/sim-pairs"
echo "ok"
