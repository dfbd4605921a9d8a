# Where the trace cannot be written: an unwritable --out fails at start with exit 2 and a clear
# message; a disk that fills mid-run (a 64 KiB tmpfs, when this machine lets us mount one) stops
# the proxy loudly with exit 2 and leaves a readable trace of what was flushed; meanwhile, its admin
# endpoint's /readyz says 503, the trace cannot be written (an exchange held in flight by a stalled
# upstream keeps it draining until a second signal cuts it).
. "$(dirname "$0")/lib.sh"

start_listening faulty python3 "$ROOT/tests/e2e/record_faults_upstream.py"

set +e
"$RETRACE" record --upstream "$faulty_URL" --out /nonexistent-dir/run.rtrace --listen 127.0.0.1:0 \
  --no-server-info >"$WORK/unwritable.out" 2>"$WORK/unwritable.err"
code=$?
set -e
check_eq "$code" 2 "unwritable --out exits 2"
check_contains "$WORK/unwritable.err" "/nonexistent-dir/run.rtrace" "the error names the file"
if grep -q "listening on" "$WORK/unwritable.out"; then fail "it listened despite an unwritable --out"; fi

mkdir -p "$WORK/small"
if ! mount -t tmpfs -o size=64k tmpfs "$WORK/small" 2>/dev/null; then
  echo "SKIP full-disk part: cannot mount a tmpfs here (needs root)"
  echo "PASS record_output"
  exit 0
fi
trap 'umount "$WORK/small" 2>/dev/null || true; _cleanup' EXIT

start_listening proxy "$RETRACE" record --upstream "$faulty_URL" --out "$WORK/small/run.rtrace" \
  --listen 127.0.0.1:0 --flush-every 1 --no-server-info --admin-listen 127.0.0.1:0 --drain-timeout 60s
ADMIN=$(grep -m1 -oE 'admin on http://[^ ]+' "$WORK/proxy.out" | sed 's/^admin on //')
curl -s -o /dev/null --max-time 120 "$proxy_URL/stall" &
_PIDS+=($!)
wait_for_line "$WORK/faulty.err" "/stall"
# Incompressible request bodies fill 64 KiB within a few exchanges.
for i in $(seq 1 40); do
  head -c 6000 /dev/urandom | base64 -w0 >"$WORK/body.txt"
  curl -s -o /dev/null --max-time 5 --data-binary @"$WORK/body.txt" "$proxy_URL/ok" || break
  kill -0 "$proxy_PID" 2>/dev/null || break
done
unwritable() {
  [[ $(curl -s -o "$WORK/readyz" -w '%{http_code}' "$ADMIN/readyz") == 503 ]] &&
    grep -q "the trace cannot be written" "$WORK/readyz"
}
wait_until "/readyz saying the trace cannot be written" unwritable
kill -INT "$proxy_PID"  # the second stop request: cut the stalled exchange now
set +e
for i in $(seq 1 100); do kill -0 "$proxy_PID" 2>/dev/null || break; sleep 0.1; done
kill -0 "$proxy_PID" 2>/dev/null && fail "the proxy kept running with a full disk"
wait "$proxy_PID"
code=$?
set -e
check_eq "$code" 2 "a full disk mid-run exits 2"
check_contains "$WORK/proxy.err" "ERROR: the trace could not be written" "a loud message"
"$RETRACE" export "$WORK/small/run.rtrace" >"$WORK/small.jsonl" 2>"$WORK/small.err" \
  || { cat "$WORK/small.err" >&2; fail "the trace on the full disk is unreadable"; }
got=$(grep -c '"exchange"' "$WORK/small.jsonl" || true)
check "the flushed exchanges are readable (got $got)" test "$got" -ge 1
echo "PASS record_output"
