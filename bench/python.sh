#!/usr/bin/env bash
# The Python module (python/, docs/python.md): retrace.open(...).exchanges() of a million
# exchanges, its CPU and peak RSS, against its peers in the same run: `retrace stats` (the same
# reader and figures, no table), `retrace export --csv` read by pandas.read_csv (what a user did
# before the module), and the zstd -dc floor; then chunks() and diff() beside `retrace diff`.
#
# Usage: bench/python.sh [BUILD_DIR] (default build/release; the module in BUILD/python/)
# BASELINE=DIR: a directory holding another build of the module (retrace.cpython-*.so, e.g. the
# commit before a change): its exchanges() rows are measured beside this build's, in the same run.
# ROUNDS=N: this build's exchanges(), BASELINE's and `retrace stats` alternated N times.
#
# Workload: scale.sh's (512 distinct streamed completions of MAX_TOKENS=8 tokens against
# `retrace serve --latency-model off`, -c 64), replayed N=100000 times into one trace, which is
# then hard-linked SEGMENTS=10 times as the numbered segments of one directory: a trace set of
# N x SEGMENTS exchanges that every reader (and retrace.open) reads as one trace. IMPORT=1 adds
# the 1,404,046 imported requests of production.python_million (public_traces.py's BurstGPT).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build/release}
RETRACE=$BUILD/retrace
N=${N:-100000}
SEGMENTS=${SEGMENTS:-10}
MAX_TOKENS=${MAX_TOKENS:-8}
PYTHON=${PYTHON:-$(awk -F= '/^Python3_EXECUTABLE:/ {print $2}' "$BUILD/CMakeCache.txt")}
export PYTHONPATH=$BUILD/python
. "$ROOT/bench/lib.sh"
bench_workdir python

for i in $(seq 1 512); do
  printf '{"request":{"model":"retrace-sim","prompt":"Scale request %d: a story about the sea.","max_tokens":%d,"temperature":0,"stream":true}}\n' "$i" "$MAX_TOKENS"
done >"$WORK/workload.jsonl"
"$RETRACE" import "$WORK/workload.jsonl" --out "$WORK/input.rtrace" --endpoint completions >/dev/null
start serve "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off
url=$(url_of serve)
"$RETRACE" replay "$WORK/input.rtrace" --target "$url" -c 64 --requests "$N" --out "$WORK/run.rtrace" >/dev/null 2>&1
"$RETRACE" replay "$WORK/input.rtrace" --target "$url" -c 64 --requests "$N" --out "$WORK/run2.rtrace" >/dev/null 2>&1
mkdir "$WORK/set"
for s in $(seq 1 "$SEGMENTS"); do ln "$WORK/run.rtrace" "$WORK/set/$(printf '%06d' "$s").rtrace"; done
rows=$(( N * SEGMENTS ))

measure() {  # LABEL ROWS CMD...: a Markdown row: CPU s, wall s, peak RSS MiB, CPU µs a row
  local label=$1 n=$2; shift 2
  /usr/bin/time -f "%U %S %e %M" -o "$WORK/time" "$@" >"$WORK/step.out" 2>"$WORK/step.err" ||
    { [[ $? == 1 && $label == *diff* ]] || { tail -5 "$WORK/step.err" >&2; exit 1; }; }
  read -r user sys wall rss < <(tail -n 1 "$WORK/time")
  [[ $n != 0 ]] || n=$(tail -n 1 "$WORK/step.out")  # 0: the rows the step printed
  awk -v l="$label" -v n="$n" -v u="$user" -v s="$sys" -v w="$wall" -v r="$rss" 'BEGIN {
    printf "| %s | %d | %.2f | %.2f | %.1f | %.2f |\n", l, n, u + s, w, r / 1024, (u + s) * 1e6 / n }'
}

echo "$(nproc) cores, load average at start $(cut -d' ' -f1-3 /proc/loadavg); trace $(stat -c %s "$WORK/run.rtrace") B per $N exchanges"
echo "| step | rows | CPU (s) | wall (s) | peak RSS (MiB) | CPU per row (µs) |"
echo "|---|---:|---:|---:|---:|---:|"
measure "python3 + import retrace, numpy, pandas (nothing read; per row: n/a)" 1 "$PYTHON" -c "import retrace, numpy, pandas"
for round in $(seq 1 "${ROUNDS:-1}"); do  # ROUNDS=N: these three alternated N times
  measure "**retrace.open(set).exchanges()**" "$rows" "$PYTHON" -c "import sys, retrace; f = retrace.open(sys.argv[1]).exchanges(); assert len(f) == $rows" "$WORK/set"
  [[ -z ${BASELINE:-} ]] || PYTHONPATH=$BASELINE measure "retrace.open(set).exchanges(), BASELINE's module" "$rows" \
    "$PYTHON" -c "import sys, retrace; f = retrace.open(sys.argv[1]).exchanges(); assert len(f) == $rows" "$WORK/set"
  measure "retrace stats set (same reader and figures)" "$rows" "$RETRACE" stats "$WORK/set"
done
measure "retrace export set --csv | pandas.read_csv" "$rows" bash -c \
  "'$RETRACE' export '$WORK/set' --csv | '$PYTHON' -c 'import sys, pandas; f = pandas.read_csv(sys.stdin); assert len(f) == $rows'"
measure "zstd -dc of the set (floor)" "$rows" bash -c "for f in '$WORK'/set/*.rtrace; do zstd -dc \"\$f\"; done >/dev/null"
measure "retrace.open(run).chunks() (rows: tokens)" 0 "$PYTHON" -c "import sys, retrace; print(len(retrace.open(sys.argv[1]).chunks()))" "$WORK/run.rtrace"
measure "retrace.diff(run, run2) (pairs)" "$N" "$PYTHON" -c "import sys, retrace; p, s = retrace.diff(sys.argv[1], sys.argv[2]); assert len(p) == $N" "$WORK/run.rtrace" "$WORK/run2.rtrace"
measure "retrace diff run run2 (pairs)" "$N" "$RETRACE" diff "$WORK/run.rtrace" "$WORK/run2.rtrace"
if [[ -n ${IMPORT:-} ]]; then  # IMPORT=1: production.python_million's trace, 1,404,046 imported requests
  python3 "$ROOT/tests/production/public_traces.py" burstgpt "$WORK/burst.csv" 0 1 >/dev/null
  "$RETRACE" import "$WORK/burst.csv" --out "$WORK/burst.rtrace" 2>/dev/null
  measure "retrace.open(burstgpt).exchanges()" 1404046 "$PYTHON" -c "import sys, retrace; f = retrace.open(sys.argv[1]).exchanges(); assert len(f) == 1404046" "$WORK/burst.rtrace"
  [[ -z ${BASELINE:-} ]] || PYTHONPATH=$BASELINE measure "retrace.open(burstgpt).exchanges(), BASELINE's module" 1404046 \
    "$PYTHON" -c "import sys, retrace; f = retrace.open(sys.argv[1]).exchanges(); assert len(f) == 1404046" "$WORK/burst.rtrace"
  measure "retrace stats burstgpt" 1404046 "$RETRACE" stats "$WORK/burst.rtrace"
fi
echo "load average at end $(cut -d' ' -f1-3 /proc/loadavg)"
