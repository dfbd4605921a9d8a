# https upstreams and targets: record and replay verify the server's certificate by default
# (refused: a tls error, 502 from record), trust it with --ca-file, skip the check with
# --insecure; a streamed completion relayed and replayed over TLS matches the one over plain HTTP.
. "$(dirname "$0")/lib.sh"

openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=127.0.0.1" \
  -addext "subjectAltName=IP:127.0.0.1" -keyout "$WORK/key.pem" -out "$WORK/cert.pem" 2>/dev/null ||
  fail "openssl could not make a test certificate"

start_listening serve "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off
start_listening front python3 "$ROOT/tests/e2e/tls_front.py" "$WORK/cert.pem" "$WORK/key.pem" "${serve_URL##*:}"
HTTPS=$front_URL
BODY='{"model":"retrace-sim","prompt":"Tell a story about the sea.","max_tokens":24,"temperature":0,"stream":true}'

# record: verification on by default, so a self-signed upstream is refused.
start_listening strict "$RETRACE" record --upstream "$HTTPS" --out "$WORK/strict.rtrace" \
  --listen 127.0.0.1:0 --no-server-info
check_eq "$(curl -s -o "$WORK/strict.body" -w '%{http_code}' "$strict_URL/v1/completions" -d "$BODY")" 502 \
  "an unverifiable upstream certificate gives 502"
check_contains "$WORK/strict.body" '"type":"upstream_tls"' "the 502 names the TLS failure"
stop "$strict_PID" || fail "record did not exit 0"

# record with --ca-file, and with --insecure: the stream arrives as over plain HTTP.
curl -sN "$serve_URL/v1/completions" -d "$BODY" >"$WORK/plain.sse"
for mode in ca-file insecure; do
  if [[ $mode == ca-file ]]; then flags=(--ca-file "$WORK/cert.pem"); else flags=(--insecure); fi
  start_listening "rec_${mode/-/_}" "$RETRACE" record --upstream "$HTTPS" --out "$WORK/$mode.rtrace" \
    --listen 127.0.0.1:0 --no-server-info "${flags[@]}"
  url_var="rec_${mode/-/_}_URL"; pid_var="rec_${mode/-/_}_PID"
  curl -sN "${!url_var}/v1/completions" -d "$BODY" >"$WORK/$mode.sse"
  # Ids and timestamps differ per response; the generated text must not.
  for f in plain "$mode"; do grep -o '"text":"[^"]*"' "$WORK/$f.sse" | tr -d '\n' >"$WORK/$f.text"; done
  check "a stream relayed from an https upstream ($mode) carries the same text" cmp -s "$WORK/plain.text" "$WORK/$mode.text"
  stop "${!pid_var}" || fail "record ($mode) did not exit 0"
  "$RETRACE" export "$WORK/$mode.rtrace" >"$WORK/$mode.jsonl"
  check_contains "$WORK/$mode.jsonl" '"kind":"none"' "the https exchange ($mode) is recorded without error"
done

# replay: the same rules for an https target.
status=0
"$RETRACE" replay "$WORK/ca-file.rtrace" --target "$HTTPS" -c 1 --out "$WORK/replay-strict.rtrace" \
  --json >"$WORK/replay-strict.json" 2>"$WORK/replay-strict.err" || status=$?
check_eq "$status" 2 "replay refuses an unverifiable certificate before any request"
check_contains "$WORK/replay-strict.err" "--ca-file PEM or --insecure" "the refusal names the fix"
"$RETRACE" replay "$WORK/ca-file.rtrace" --target "$HTTPS" -c 1 --ca-file "$WORK/cert.pem" \
  --out "$WORK/replay-ok.rtrace" --json >/dev/null 2>&1 || fail "replay over https with --ca-file"
"$RETRACE" diff "$WORK/ca-file.rtrace" "$WORK/replay-ok.rtrace" >"$WORK/diff.out" ||
  { cat "$WORK/diff.out" >&2; fail "replay over https differs from the recording"; }
echo "PASS tls_upstream"
