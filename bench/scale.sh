#!/usr/bin/env bash
# How cost grows (issue 18): record, replay, diff, stats and inspect at N exchanges, for each N
# given (default 10000 100000; add 1000000 by argument). Per step: CPU seconds (user+sys), wall
# seconds and peak RSS from GNU time, and CPU microseconds per exchange.
#
# Usage: bench/scale.sh [RETRACE_BINARY] [SIZES...]   e.g. bench/scale.sh build/release/retrace 10000 100000 1000000
#
# The workload is small on purpose, so that a million exchanges fit in minutes: 512 distinct
# streamed completions of MAX_TOKENS (default 8) tokens, imported into a trace, and `retrace
# serve --latency-model off` (iterations run flat out) as the server. For each N:
#   record   `retrace replay INPUT --requests N -c C` -> `retrace record --max-exchanges N` -> serve
#            (record stops by itself after N; the client is measured too, as "record's client")
#   replay   `retrace replay RECORDING -c C` -> serve (the N-exchange recording, read as it is
#            sent: replay/feed.hpp)
#   diff     `retrace diff RECORDING REPLAY`
#   stats    `retrace stats REPLAY`;  inspect `retrace inspect REPLAY`
# serve's own CPU over each phase is read from /proc. Everything runs on 127.0.0.1.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
RETRACE=${1:-$ROOT/build/release/retrace}
[[ $# -gt 0 ]] && shift
[[ $# -gt 0 ]] && SIZES=("$@") || SIZES=(10000 100000)
CONCURRENCY=${CONCURRENCY:-64}
MAX_TOKENS=${MAX_TOKENS:-8}
. "$ROOT/bench/lib.sh"
bench_workdir scale

url_of() {  # FILE: waits for "listening on http://..." in FILE and prints the URL
  local i
  for i in $(seq 1 600); do
    grep -m1 -oE 'http://[0-9.:]+' "$1" 2>/dev/null && return 0
    sleep 0.1  # polling for the line, not waiting on time
  done
  echo "no 'listening on' line in $1" >&2
  return 1
}
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }  # utime + stime, clock ticks
HZ=$(getconf CLK_TCK)

row() {  # N LABEL TIMEFILE: one Markdown row from GNU time's "%U %S %e %M"
  local n=$1 label=$2 user sys wall rss
  read -r user sys wall rss < <(tail -n 1 "$3")
  awk -v n="$n" -v l="$label" -v u="$user" -v s="$sys" -v w="$wall" -v r="$rss" 'BEGIN {
    printf "| %d | %s | %.2f | %.2f | %.1f | %.1f |\n", n, l, u + s, w, (u + s) * 1e6 / n, r / 1024 }'
}
measure() {  # N LABEL CMD...: runs CMD under GNU time; exit 1 (diff: differences) is not a failure
  local n=$1 label=$2 rc=0; shift 2
  /usr/bin/time -f "%U %S %e %M" -o "$WORK/time" "$@" >"$WORK/step.out" 2>"$WORK/step.err" || rc=$?
  if (( rc > 1 )); then echo "$label failed ($rc):" >&2; tail -5 "$WORK/step.err" >&2; exit 1; fi
  row "$n" "$label" "$WORK/time"
}

for i in $(seq 1 512); do
  printf '{"request":{"model":"retrace-sim","prompt":"Scale request %d: a story about the sea.","max_tokens":%d,"temperature":0,"stream":true}}\n' "$i" "$MAX_TOKENS"
done >"$WORK/workload.jsonl"
"$RETRACE" import "$WORK/workload.jsonl" --out "$WORK/input.rtrace" --endpoint completions >/dev/null

"$RETRACE" serve --listen 127.0.0.1:0 --latency-model off >"$WORK/serve.out" 2>"$WORK/serve.err" &
serve_pid=$!
PIDS+=("$serve_pid")
serve_url=$(url_of "$WORK/serve.out")

echo "$(nproc) cores, load average at start $(cut -d' ' -f1-3 /proc/loadavg); -c $CONCURRENCY, max_tokens $MAX_TOKENS, streamed"
echo "| exchanges | step | CPU (s) | wall (s) | CPU per exchange (µs) | peak RSS (MiB) |"
echo "|---:|---|---:|---:|---:|---:|"
for n in "${SIZES[@]}"; do
  rm -f "$WORK"/rec.rtrace "$WORK"/rep.rtrace
  # record: the proxy under GNU time in the background, stopping by itself after n exchanges.
  serve0=$(cpu_ticks "$serve_pid")
  /usr/bin/time -f "%U %S %e %M" -o "$WORK/record.time" "$RETRACE" record --upstream "$serve_url" \
    --out "$WORK/rec.rtrace" --listen 127.0.0.1:0 --no-server-info --include-path '/v1/completions' \
    --max-exchanges "$n" >"$WORK/record.out" 2>"$WORK/record.err" &
  record_pid=$!
  PIDS+=("$record_pid")
  record_url=$(url_of "$WORK/record.out")
  measure "$n" "record's client (replay --requests N)" "$RETRACE" replay "$WORK/input.rtrace" \
    --target "$record_url" -c "$CONCURRENCY" --requests "$n" --out "$WORK/client.rtrace" --force
  wait "$record_pid" || { echo "record failed:" >&2; tail -5 "$WORK/record.err" >&2; exit 1; }
  row "$n" "**record** (proxy)" "$WORK/record.time"
  awk -v t="$(( $(cpu_ticks "$serve_pid") - serve0 ))" -v hz="$HZ" -v n="$n" \
    'BEGIN { printf "| %d | serve, during record | %.2f | | %.1f | |\n", n, t / hz, t / hz * 1e6 / n }'

  serve0=$(cpu_ticks "$serve_pid")
  measure "$n" "**replay** of the recording" "$RETRACE" replay "$WORK/rec.rtrace" \
    --target "$serve_url" -c "$CONCURRENCY" --out "$WORK/rep.rtrace"
  awk -v t="$(( $(cpu_ticks "$serve_pid") - serve0 ))" -v hz="$HZ" -v n="$n" \
    'BEGIN { printf "| %d | serve, during replay | %.2f | | %.1f | |\n", n, t / hz, t / hz * 1e6 / n }'
  measure "$n" "**diff** recording replay" "$RETRACE" diff "$WORK/rec.rtrace" "$WORK/rep.rtrace"
  measure "$n" "**stats** replay" "$RETRACE" stats "$WORK/rep.rtrace"
  measure "$n" "**inspect** replay" "$RETRACE" inspect "$WORK/rep.rtrace"
  measure "$n" "zstd -dc recording + replay (floor)" \
    bash -c "zstd -dc '$WORK/rec.rtrace' >/dev/null && zstd -dc '$WORK/rep.rtrace' >/dev/null"
  echo "| $n | sizes: recording $(stat -c %s "$WORK/rec.rtrace") B, replay $(stat -c %s "$WORK/rep.rtrace") B | | | | |"
done
echo "load average at end $(cut -d' ' -f1-3 /proc/loadavg)"
