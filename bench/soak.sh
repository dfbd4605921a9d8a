#!/usr/bin/env bash
# Soak (issue 19): `retrace replay -c 64` through `retrace record` into `retrace serve`, for a
# given duration, sampling the resident memory (VmRSS) and open file descriptors of all three
# processes from /proc every INTERVAL seconds. Flat is the bar: memory and descriptors at the end
# should be what they were once warm, however many exchanges went through.
#
# Usage: bench/soak.sh [DURATION_SECONDS=600] [INTERVAL_SECONDS=10] [RETRACE_BINARY]
# Prints one table row per sample (markdown) and a last row with the exchanges recorded.
# replay runs the same 512-request workload over and over (--repeat, one process, one trace per
# pass) and is stopped with SIGINT at the end; record with SIGTERM.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
DURATION=${1:-600}
INTERVAL=${2:-10}
RETRACE=${3:-$ROOT/build/release/retrace}
CONCURRENCY=${CONCURRENCY:-64}
. "$ROOT/bench/lib.sh"
bench_workdir soak


soak_workload_and_serve  # $WORK/workload.rtrace, serve_url
start record "$RETRACE" record --upstream "$serve_url" --out "$WORK/soak.rtrace" --listen 127.0.0.1:0 --no-server-info
record_url=$(url_of record)
mkdir -p "$WORK/runs"
start replay "$RETRACE" replay "$WORK/workload.rtrace" --target "$record_url" -c "$CONCURRENCY" \
  --repeat 100000 --out "$WORK/runs/run.rtrace"

echo "soak: ${DURATION}s, replay -c $CONCURRENCY -> record -> serve, sampled every ${INTERVAL}s"
echo "| t (s) | serve RSS (KiB) | serve fds | record RSS (KiB) | record fds | replay RSS (KiB) | replay fds |"
echo "|---:|---:|---:|---:|---:|---:|---:|"
started=$(date +%s)
while :; do
  now=$(( $(date +%s) - started ))
  kill -0 "$replay_PID" 2>/dev/null || { echo "replay ended early:" >&2; tail -5 "$WORK/replay.err" >&2; exit 1; }
  echo "| $now | $(rss_kib "$serve_PID") | $(fds "$serve_PID") | $(rss_kib "$record_PID") | $(fds "$record_PID") | $(rss_kib "$replay_PID") | $(fds "$replay_PID") |"
  (( now >= DURATION )) && break
  sleep "$INTERVAL"  # a sampling period, not a wait for an event
done
kill -INT "$replay_PID"
wait "$replay_PID" || true
kill -TERM "$record_PID"
wait "$record_PID" || true
grep -m1 -oE 'recorded [0-9]+ exchange.*' "$WORK/record.err"
echo "replay passes completed: $(ls "$WORK/runs" | wc -l)"
