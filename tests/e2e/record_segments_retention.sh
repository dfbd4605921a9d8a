# Segments over time and under a budget: --rotate-every rotates while traffic flows (at least 3
# segments); --max-disk deletes the oldest closed segments, never the open one, each deletion
# logged and counted in the summary; kill -9 right after a rotation loses nothing flushed; bad
# --out and --rotate-size are refused with a message that names the fix.
. "$(dirname "$0")/lib.sh"

start_listening upstream "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off --max-model-len 200000

# Refused before anything starts.
refused() {
  local what=$1 expect=$2; shift 2
  if "$RETRACE" record --upstream "$upstream_URL" --listen 127.0.0.1:0 --no-server-info "$@" \
      >"$WORK/refused.out" 2>"$WORK/refused.err"; then fail "$what was accepted"; fi
  check_contains "$WORK/refused.err" "$expect" "$what"
}
refused "--rotate-size below one frame" "below one frame" --out "$WORK/small/" --rotate-size 1000
refused "--rotate-every into a file" "give --out a directory" --out "$WORK/one.rtrace" --rotate-every 1s
mkdir -p "$WORK/foreign" && echo mine >"$WORK/foreign/notes.txt"
refused "a directory holding other files" "1 entry that is not a segment (e.g. 'notes.txt')" --out "$WORK/foreign/" --rotate-every 1s
check_eq "$(cat "$WORK/foreign/notes.txt")" mine "the foreign file is untouched"
echo file >"$WORK/plain"
refused "a directory that cannot be made" "cannot create the segment directory" --out "$WORK/plain/segs/"

# Prompts of 100 KB that do not compress much.
python3 - "$WORK" <<'PY'
import random, sys, json
random.seed(41)
for i in range(30):
    letters = random.choices("abcdefghijklmnopqrstuvwxyz", k=89600)
    words = " ".join("".join(letters[j:j + 7]) for j in range(0, len(letters), 7))
    body = {"model": "retrace-sim", "prompt": f"request {i}: {words}", "max_tokens": 16}
    open(f"{sys.argv[1]}/body{i}.json", "w").write(json.dumps(body))
PY
send() {
  curl -sf "$1/v1/completions" -H 'Content-Type: application/json' -d @"$WORK/body$(($2 % 30)).json" >/dev/null \
    || fail "request $2 through the proxy failed"
}

# By time: traffic until the fourth segment opens (the event waited for, bounded).
start_listening timed "$RETRACE" record --upstream "$upstream_URL" --out "$WORK/timed/" \
  --rotate-every 300ms --listen 127.0.0.1:0 --no-server-info --flush-every 1
sent=0
while [[ ! -f "$WORK/timed/000004.rtrace" ]]; do
  send "$timed_URL" $sent; sent=$((sent + 1))
  [[ $sent -le 3000 ]] || fail "no fourth segment after 3000 requests at --rotate-every 300ms"
done
# kill -9 just after a rotation: every exchange answered was flushed (--flush-every 1), none lost.
wait_for_line "$WORK/timed.err" "opening 000004.rtrace" "$timed_PID"
send "$timed_URL" $sent; sent=$((sent + 1))
flushed() { [[ "$("$RETRACE" export "$WORK/timed" 2>/dev/null | grep -c '"exchange"')" -ge $sent ]]; }
wait_until "every exchange flushed" flushed
kill -9 "$timed_PID"; wait "$timed_PID" 2>/dev/null || true
"$RETRACE" export "$WORK/timed" >"$WORK/timed.jsonl" 2>"$WORK/timed-export.err" || fail "export after kill -9"
check_eq "$(grep -c '"exchange"' "$WORK/timed.jsonl")" "$sent" "exchanges kept by kill -9 after a rotation"
for file in "$WORK"/timed/*.rtrace; do
  zstd -dc "$file" 2>/dev/null | capnp decode "$ROOT/format/trace.capnp" Record >/dev/null 2>&1 \
    || [[ "$file" == "$(ls "$WORK"/timed/*.rtrace | tail -1)" ]] \
    || fail "a closed segment, $file, is not read by the stock tools"
done

# Under a budget: 1 MiB segments, 3 MiB on disk; 70 exchanges of 100 KB make over 4 MB
# compressed, so the oldest go.
start_listening budget "$RETRACE" record --upstream "$upstream_URL" --out "$WORK/budget/" \
  --rotate-size 1MiB --max-disk 3MiB --listen 127.0.0.1:0 --no-server-info
for i in $(seq 0 69); do send "$budget_URL" "$i"; done
wait_for_line "$WORK/budget.err" "deleted segment 000001.rtrace" "$budget_PID"
stop "$budget_PID" || fail "the budgeted proxy did not stop cleanly"
deleted=$(grep -c 'deleted segment' "$WORK/budget.err")
check_contains "$WORK/budget.err" " $deleted deleted (" "the summary counts each deletion logged"
# The oldest went, in order: what is left is the newest segments, numbered without a gap.
present=$(ls "$WORK/budget" | sort)
first=$(echo "$present" | head -1); last=$(echo "$present" | tail -1)
check_eq "$((10#${first%.rtrace}))" "$((deleted + 1))" "the first segment left after $deleted deletions"
check_eq "$(echo "$present" | wc -l)" "$((10#${last%.rtrace} - deleted))" "segments left, without a gap"
total=$(cat "$WORK"/budget/*.rtrace | wc -c)
[[ $total -le $((3 * 1048576 + 140000)) ]] || fail "the set holds $total bytes: past --max-disk by more than one exchange"
"$RETRACE" inspect "$WORK/budget" >"$WORK/budget-inspect.txt" || fail "inspect of the budgeted set"
check_contains "$WORK/budget-inspect.txt" "damage        none" "retention leaves no gap"
echo "PASS record_segments_retention"
