#!/usr/bin/env bash
# replay's resident memory across --repeat passes (issue 19): one `retrace replay -c 64
# --repeat PASSES` process runs the same 512 streamed completions (32 tokens) against
# `retrace serve --latency-model off`; its VmRSS is read from /proc as each pass's trace appears.
# Flat is the bar once warm. Extra environment (e.g. MALLOC_ARENA_MAX=2) passes to replay.
#
# Usage: bench/replay_repeat_rss.sh [PASSES=30] [RETRACE_BINARY]
# Prints "pass RSS_KiB" rows, then the growth from pass 5 to the last, per pass.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PASSES=${1:-30}
RETRACE=${2:-$ROOT/build/release/retrace}
. "$ROOT/bench/lib.sh"
bench_workdir repeat-rss

for i in $(seq 1 512); do
  printf '{"request":{"model":"retrace-sim","prompt":"Repeat request %d: tell a story about the sea.","max_tokens":32,"temperature":0,"stream":true}}\n' "$i"
done >"$WORK/workload.jsonl"
"$RETRACE" import "$WORK/workload.jsonl" --out "$WORK/workload.rtrace" --endpoint completions >/dev/null

"$RETRACE" serve --listen 127.0.0.1:0 --latency-model off >"$WORK/serve.out" 2>"$WORK/serve.err" &
PIDS+=("$!")
for _ in $(seq 1 300); do
  url=$(grep -m1 -oE 'http://[0-9.:]+' "$WORK/serve.out" 2>/dev/null || true)
  [[ -n "$url" ]] && break
  sleep 0.1
done
[[ -n "$url" ]] || { cat "$WORK/serve.err" >&2; exit 1; }

mkdir -p "$WORK/runs"
"$RETRACE" replay "$WORK/workload.rtrace" --target "$url" -c 64 --repeat "$PASSES" \
  --out "$WORK/runs/run.rtrace" >/dev/null 2>"$WORK/replay.err" &
replay_pid=$!
PIDS+=("$replay_pid")
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "| pass | replay RSS (KiB) |"
echo "|---:|---:|"
declare -a rss
for pass in $(seq 1 "$((PASSES - 1))"); do
  # Pass `pass` is over once the next one's OUT.partial exists (its trace is written by then).
  next=$(printf '%s/runs/run.r%d.rtrace.partial' "$WORK" "$((pass + 1))")
  while [[ ! -e "$next" ]]; do
    kill -0 "$replay_pid" 2>/dev/null || { tail -5 "$WORK/replay.err" >&2; exit 1; }
    sleep 0.05
  done
  rss[$pass]=$(awk '/^VmRSS:/ {print $2}' "/proc/$replay_pid/status")
  echo "| $pass | ${rss[$pass]} |"
done
wait "$replay_pid"
last=$((PASSES - 1))
awk -v a="${rss[5]}" -v b="${rss[$last]}" -v n="$((last - 5))" \
  'BEGIN {printf "growth from pass 5 to %d: %d KiB, %.1f KiB per pass\n", 5 + n, b - a, (b - a) / n}'
