#!/usr/bin/env bash
# An interrupted sweep continues with --resume: finished runs are not redone (their files keep
# inode and mtime), the interrupted one is redone, and the summary covers every run.
. "$(dirname "$0")/lib.sh"


"$RETRACE" import "$ROOT/traces/gold-intents.jsonl" --out "$WORK/gold.rtrace" 2>/dev/null
# A latency model slow enough that each run takes a moment, so the kill lands mid-sweep.
start_listening SERVE "$RETRACE" serve --listen 127.0.0.1:0 --decode-step-ms 10

"$RETRACE" sweep "$WORK/gold.rtrace" --target "$SERVE_URL" --concurrency 1,2,4 --repeat 2 \
  --out "$WORK/s" >"$WORK/first.out" 2>"$WORK/first.err" &
sweep_pid=$!
_PIDS+=("$sweep_pid")
done_runs() { grep -o '"status":"done"' "$WORK/s/plan.json" 2>/dev/null | wc -l; }
for _ in $(seq 1 600); do
  (( $(done_runs) >= 2 )) && break
  kill -0 "$sweep_pid" 2>/dev/null || break
  sleep 0.05
done
kill -KILL "$sweep_pid" 2>/dev/null || fail "the sweep finished before it could be interrupted"
wait "$sweep_pid" 2>/dev/null || true
finished=$(done_runs)
(( finished >= 2 && finished < 6 )) || fail "expected an interrupted sweep, $finished of 6 runs done"
[[ ! -f "$WORK/s/summary.json" ]] || fail "an interrupted sweep must not have a summary"

# Identity of every finished run's file, to prove --resume leaves them alone.
declare -A before
for name in $(node -e "const p=require(process.argv[1]); console.log(p.runs.filter(r=>r.status=='done').map(r=>r.file).join(' '))" "$WORK/s/plan.json"); do
  before[$name]=$(stat -c '%i %Y.%y' "$WORK/s/$name")
done
sleep 1.1  # so a rewrite would show in the mtime even at one-second resolution

status=0
"$RETRACE" sweep --resume "$WORK/s" >"$WORK/second.out" 2>"$WORK/second.err" || status=$?
[[ $status == 0 ]] || { cat "$WORK/second.err" >&2; fail "resumed sweep: exit $status, want 0"; }
check_contains "$WORK/second.err" "$finished of 6 runs already done" "resume reports what it skips"
for name in "${!before[@]}"; do
  check_eq "$(stat -c '%i %Y.%y' "$WORK/s/$name")" "${before[$name]}" "$name was rewritten by --resume"
done
check_eq "$(done_runs)" "6" "every run done after --resume"
check_eq "$(json "$WORK/s/summary.json" 's.runs.length')" "6" "summary covers every run"
check_eq "$(json "$WORK/s/summary.json" 's.runs.map(r=>r.exchanges).join(",")')" "20,20,20,20,20,20" "every run complete"
check_eq "$(json "$WORK/s/summary.json" 's.levels.map(l=>l.runs).join(",")')" "2,2,2" "runs per level"

# --resume keeps its saved settings.
status=0; "$RETRACE" sweep --resume "$WORK/s" --concurrency 8 2>"$WORK/third.err" || status=$?
check_eq "$status" "2" "--resume with a changed setting"
check_contains "$WORK/third.err" "--concurrency" "the refused flag is named"
echo "ok"
