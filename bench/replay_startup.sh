#!/usr/bin/env bash
# Replay's start-up as a run grows: the main thread's CPU before the first request (reading the
# input, choosing and preparing every request, the preflight) and the whole client's CPU per
# request, for non-streamed short requests against `retrace serve --latency-model off`.
# Usage: bench/replay_startup.sh BIN [BIN ...]  — the binaries alternate, ROUNDS times (default 3).
# Environment: TRACE_SIZE (exchanges in the input, default 200000), LIMIT (requests sent per run,
# default 140000: what bench/replay.sh (a) sends in its 4 s runs here), ROUNDS.
# The main thread's CPU is read from /proc every 50 ms; its start-up is where it stops growing
# while the worker runs (so it is at most ~50 ms late).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
(($# >= 1)) || { echo "usage: $0 BIN [BIN ...]" >&2; exit 2; }
TRACE_SIZE=${TRACE_SIZE:-200000}
LIMIT=${LIMIT:-140000}
ROUNDS=${ROUNDS:-3}
. "$ROOT/bench/lib.sh"
bench_workdir bench-startup
HZ=$(getconf CLK_TCK)

python3 - "$WORK/short.jsonl" "$TRACE_SIZE" <<'PY'
import json, sys
body = {"model": "retrace-sim", "prompt": "Say hi.", "max_tokens": 4, "temperature": 0}
with open(sys.argv[1], "w") as out:
    for i in range(int(sys.argv[2])):
        out.write(json.dumps({"request": body}) + "\n")
PY
"$1" import "$WORK/short.jsonl" --endpoint completions --out "$WORK/short.rtrace" >/dev/null 2>"$WORK/import.err"
taskset -c 0 "$1" serve --listen 127.0.0.1:0 --latency-model off >"$WORK/serve.out" 2>"$WORK/serve.err" &
PIDS+=($!)
URL=$(url_of serve)

thread_ticks() { local line; read -r line <"/proc/$1/task/$1/stat" || return 1; set -- ${line##*) }; echo $(( ${12} + ${13} )); }
echo "machine: $(nproc) cores; input $TRACE_SIZE exchanges, $LIMIT sent per run, server on core 0, client on core 1"
for round in $(seq 1 "$ROUNDS"); do
  for bin in "$@"; do
    /usr/bin/time -f '%U %S' -o "$WORK/time.txt" taskset -c 1 "$bin" replay "$WORK/short.rtrace" \
      --target "$URL" -c 64 --threads 1 --limit "$LIMIT" --no-stream --token-ids off \
      --out "$WORK/run.rtrace" --force --json >"$WORK/run.json" 2>"$WORK/run.err" &
    waiter=$!
    pid=""
    while [[ -z "$pid" ]] && kill -0 "$waiter" 2>/dev/null; do
      pid=$(pgrep -n -P "$waiter" || true)
    done
    prev=-1; startup=""
    while [[ -n "$pid" ]] && ticks=$(thread_ticks "$pid" 2>/dev/null); do
      if [[ -z "$startup" && "$ticks" -gt 0 && "$ticks" == "$prev" ]]; then startup=$ticks; fi
      prev=$ticks
      sleep 0.05
    done
    wait "$waiter"
    awk -v b="$bin" -v r="$round" -v s="${startup:-0}" -v hz="$HZ" -v n="$LIMIT" \
      '{printf "round %d  %s  start-up (main thread) %.2f CPU-s  whole run %.1f us per request\n", r, b, s / hz, ($1 + $2) * 1e6 / n}' \
      "$WORK/time.txt"
  done
done
