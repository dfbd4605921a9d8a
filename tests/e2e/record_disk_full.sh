# retrace record when the disk fills up: it stops with the exact count of exchanges lost. The
# trace sits on a 256 KiB tmpfs (root), else under `ulimit -f` with SIGXFSZ ignored (writes fail
# with EFBIG). A slow stream in flight when the write fails is drained to its end, not dropped;
# record exits 2, and what the trace holds plus what it says it lost is every exchange a client
# got an answer for. Frames of 4 exchanges: the ones in the frame that failed are lost too.
. "$(dirname "$0")/lib.sh"

DISK="$WORK/disk"
mkdir -p "$DISK"
if [[ $(id -u) == 0 ]] && mount -t tmpfs -o size=256k tmpfs "$DISK" 2>/dev/null; then
  trap 'umount "$DISK" 2>/dev/null || true; _cleanup' EXIT
  limit=()
else
  limit=(bash -c 'trap "" XFSZ; ulimit -f 256; exec "$@"' limit)  # 256 KiB
fi

start_listening upstream python3 "$ROOT/tests/e2e/record_faults_upstream.py"
start_listening proxy "${limit[@]}" "$RETRACE" record --upstream "$upstream_URL" --out "$DISK/t.rtrace" \
  --listen 127.0.0.1:0 --no-server-info --flush-every 4 --drain-timeout 30s
P=$proxy_URL

# A stream that takes about 10 s, in flight when the disk fills.
curl -sN --max-time 60 "$P/v1/chat/completions?fault=slow&n=200" -d '{}' >"$WORK/slow.out" 2>"$WORK/slow.err" &
slow_pid=$!
wait_for_line "$WORK/upstream.err" "request POST /v1/chat/completions?fault=slow" "$upstream_PID"

# Incompressible requests of 24 KiB, one at a time, until record stops taking them.
answered=0
for i in $(seq 1 200); do
  head -c 18000 /dev/urandom | base64 -w0 >"$WORK/body"
  code=$(curl -s --max-time 30 -o /dev/null -w '%{http_code}' --data-binary "@$WORK/body" "$P/fill/$i" || true)
  if [[ $code == 200 ]]; then answered=$((answered + 1)); continue; fi
  [[ $code == 000 ]] || fail "request $i got HTTP $code"
  break
done
(( answered > 3 && answered < 200 )) || fail "expected the disk to fill after a few requests (answered $answered)"

wait "$slow_pid" || fail "the stream in flight when the disk filled was dropped (curl exit $?): $(cat "$WORK/slow.err")"
check_contains "$WORK/slow.out" "tok199 " "the stream in flight got its last event"
check_contains "$WORK/slow.out" "[DONE]" "the stream in flight ended well"

status=0
wait "$proxy_PID" || status=$?
check_eq "$status" 2 "record's exit status after a write failure"
check_contains "$WORK/proxy.err" "the trace could not be written to the end" "record names the failure"
lost=$(grep -oE '[0-9]+ exchange\(s\) were lost' "$WORK/proxy.err" | grep -oE '^[0-9]+') ||
  fail "record did not say how many exchanges were lost: $(cat "$WORK/proxy.err")"
said=$(grep -oE 'recorded [0-9]+ exchange' "$WORK/proxy.err" | grep -oE '[0-9]+')

"$RETRACE" export "$DISK/t.rtrace" >"$WORK/t.jsonl" 2>"$WORK/export.err" || true
in_trace=$(jq -c "select(.exchange)" "$WORK/t.jsonl" | wc -l)
check_eq "$in_trace" "$said" "exchanges in the trace = 'recorded N'"
# Every answered request (the fillers and the slow stream) is in the trace or counted lost.
check_eq "$((in_trace + lost))" "$((answered + 1))" "recorded + lost = answered ($in_trace + $lost)"
(( lost >= 2 )) || fail "the failing exchange and the stream in flight are both lost (lost $lost)"
echo "answered $answered + 1 stream; in the trace $in_trace, lost $lost"
