#!/usr/bin/env bash
# Peak memory of the summaries that read whole runs (issue 28 item 4): `retrace report RUN` (the
# run report), `retrace report A B` (the diff report), `retrace report SWEEP_DIR` (the sweep's
# summary and report, as `sweep` builds them after its runs), beside `stats RUN` and `diff A B` of
# the same runs. Runs come from one `retrace sweep --repeat 2` per size against `retrace serve
# --latency-model off` (its two runs are A and B): 20 gold questions with expected answers none of
# the simulator's answers match (every question fails: the failed-question list is as long as the
# run), cycled to N requests of 16 streamed tokens at -c 64, for each N in SIZES; and 32 streamed
# answers of 16,384 tokens at -c 32. Peak RSS from GNU time; each binary measured on the same runs.
#
# Usage: bench/summaries_memory.sh [RETRACE [BEFORE_BINARY]]   (SIZES="10000 50000" by default)
# Prints a Markdown table; bench/RESULTS.md keeps one.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
RETRACE=${1:-$ROOT/build/release/retrace}
BEFORE=${2:-}
SIZES=${SIZES:-10000 50000}
. "$ROOT/bench/lib.sh"
bench_workdir summaries

"$RETRACE" serve --listen 127.0.0.1:0 --latency-model off --max-model-len 32768 >"$WORK/serve.out" 2>"$WORK/serve.err" &
PIDS+=($!)
URL=$(url_of serve)

peak_mib() {  # CMD... : runs it under GNU time, prints its peak RSS in MiB (exit 1, "differ", is fine)
  /usr/bin/time -f '%M' -o "$WORK/time.txt" "$@" >/dev/null 2>"$WORK/cmd.err" || [[ $? == 1 ]] || {
    cat "$WORK/cmd.err" >&2; exit 1; }
  awk '{printf "%.0f", $1 / 1024}' "$WORK/time.txt"
}

# input OUT COUNT MAX_TOKENS: COUNT chat questions with an expected answer, streamed, ignore_eos.
input() {
  for i in $(seq 1 "$2"); do
    printf '{"request":{"messages":[{"role":"user","content":"Question %d: name the capital of country %d."}],"max_tokens":%d,"ignore_eos":true,"temperature":0,"stream":true},"expected":"Atlantis %d"}\n' \
      "$i" "$i" "$3" "$i"
  done >"$WORK/in.jsonl"
  "$RETRACE" import "$WORK/in.jsonl" --out "$1" --force 2>/dev/null
}

row() {  # LABEL REQUESTS COMMAND... : one row, every binary on the same command
  local label=$1 requests=$2 after before=""; shift 2
  [[ -n "$BEFORE" ]] && before="$(peak_mib "$BEFORE" "$@") → "
  after=$(peak_mib "$RETRACE" "$@")  # last: the pages measured below are its
  echo "| $label | $requests | $before$after |"
}

measure() {  # NAME REQUESTS INPUT_COUNT MAX_TOKENS CONCURRENCY
  local dir="$WORK/sweep-$1" runs
  input "$WORK/in.rtrace" "$3" "$4"
  "$RETRACE" sweep "$WORK/in.rtrace" --target "$URL" -c "$5" --repeat 2 --requests "$2" --out "$dir" \
    --force >/dev/null 2>"$WORK/sweep.err" || { cat "$WORK/sweep.err" >&2; exit 1; }
  runs=$(awk -v b="$(stat -c %s "$dir/c$5-r1.rtrace")" 'BEGIN {printf "%.1f", b / 1048576}')
  local a="$dir/c$5-r1.rtrace" b="$dir/c$5-r2.rtrace"
  row "$1: stats A ($runs MiB)" "$2" stats "$a"
  row "$1: diff A B" "$2" diff "$a" "$b"
  row "$1: **run report** A" "$2" report "$a" --out "$WORK/run.html" --force
  row "$1: **diff report** A B" "$2" report "$a" "$b" --out "$WORK/diff.html" --force
  row "$1: **sweep summary** (report DIR)" "$2" report "$dir" --out "$WORK/sweep.html" --force
  echo "| $1: pages: run $(( $(stat -c %s "$WORK/run.html") / 1024 )) KiB, diff $(( $(stat -c %s "$WORK/diff.html") / 1024 )) KiB, sweep $(( $(stat -c %s "$WORK/sweep.html") / 1024 )) KiB (RETRACE's) | | |"
}

echo "retrace: $RETRACE${BEFORE:+ (before: $BEFORE)}; $(nproc) cores; load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| runs: command | requests a run | peak RSS (MiB)${BEFORE:+ before → after} |"
echo "|---|---:|---:|"
for n in $SIZES; do measure "${n} × 16 tokens" "$n" 20 16 64; done
measure "32 × 16k tokens" 32 32 16384 32
