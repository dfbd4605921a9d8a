#!/usr/bin/env bash
# SIGINT stops a sweep started in the background. A non-interactive shell starts background jobs
# with SIGINT ignored; the signal watcher must replace that, or `kill -INT` would be lost and the
# sweep would run to its end. Stopped, it keeps the finished runs and says how to --resume.
. "$(dirname "$0")/lib.sh"

"$RETRACE" import "$ROOT/traces/gold-intents.jsonl" --out "$WORK/gold.rtrace" 2>/dev/null
# A latency model slow enough that the sweep is still running when the signal comes.
start_listening SERVE "$RETRACE" serve --listen 127.0.0.1:0 --decode-step-ms 20

"$RETRACE" sweep "$WORK/gold.rtrace" --target "$SERVE_URL" --concurrency 1,2,4 --repeat 3 \
  --out "$WORK/s" >"$WORK/sweep.out" 2>"$WORK/sweep.err" &
sweep_pid=$!
_PIDS+=("$sweep_pid")
wait_for_line "$WORK/sweep.err" "sweep: run 1/9" "$sweep_pid"
kill -INT "$sweep_pid"
status=0
wait "$sweep_pid" || status=$?
check_eq "$status" "2" "exit status of a sweep stopped by SIGINT"
check_contains "$WORK/sweep.err" "Ctrl-C again to quit at once" "the first signal says what it does"
check_contains "$WORK/sweep.err" "continue with: retrace sweep --resume" "the stopped sweep says how to go on"
[[ ! -f "$WORK/s/summary.json" ]] || fail "a sweep stopped by SIGINT ran to its end"
echo "ok"
