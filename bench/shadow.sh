#!/usr/bin/env bash
# retrace shadow's cost to the client (issue 41): the latency a client sees through `shadow` (two
# mirrors, both fast) against plain `record`, and against the server directly, in the same run,
# alternating setups per round; then the same with a slow candidate (--decode-step-ms 100, --mirror-queue 8), whose
# drops are counted while the client's figures should not move; and the online comparison's pace
# (candidate pairs compared per second of shadow's CPU, from its summary and /proc).
# The client is `retrace replay -c CONCURRENCY` over streamed completions made here; TTFT and
# end-to-end latency are `retrace stats --json` of each run's trace.
# Usage: bench/shadow.sh [RETRACE_BINARY] [REQUESTS] [MAX_TOKENS] [ROUNDS]  (CONCURRENCY=32)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/bench/lib.sh"
RETRACE=${1:-$ROOT/build/release/retrace}
REQUESTS=${2:-640}
MAX_TOKENS=${3:-64}
ROUNDS=${4:-3}
CONCURRENCY=${CONCURRENCY:-32}
bench_workdir bench-shadow

for i in $(seq 1 "$REQUESTS"); do
  printf '{"request":{"model":"retrace-sim","prompt":"Request %d: tell a long story about the sea.","max_tokens":%d,"temperature":0,"stream":true,"ignore_eos":true}}\n' "$i" "$MAX_TOKENS"
done >"$WORK/workload.jsonl"
"$RETRACE" import "$WORK/workload.jsonl" --out "$WORK/workload.rtrace" --endpoint completions >/dev/null

start() {  # NAME CMD...
  local name=$1; shift
  "$@" >"$WORK/$name.out" 2>"$WORK/$name.err" &
  PIDS+=("$!")
}
SERVE=(serve --listen 127.0.0.1:0 --latency-model off --prefix-cache off)
start primary "$RETRACE" "${SERVE[@]}"; PRIMARY=$(url_of primary)
start control "$RETRACE" "${SERVE[@]}"; CONTROL=$(url_of control)
start candidate "$RETRACE" "${SERVE[@]}"; CANDIDATE=$(url_of candidate)
start slow "$RETRACE" serve --listen 127.0.0.1:0 --prefix-cache off --decode-step-ms 100; SLOW=$(url_of slow)
start record "$RETRACE" record --upstream "$PRIMARY" --out "$WORK/recorded/" --listen 127.0.0.1:0 --no-server-info
RECORD=$(url_of record)
start shadow "$RETRACE" shadow --primary "$PRIMARY" --control "$CONTROL" --candidate "$CANDIDATE" \
  --out "$WORK/shadow" --listen 127.0.0.1:0 --report-every 1s
SHADOW=$(url_of shadow); SHADOW_PID=${PIDS[-1]}
start shadow_slow "$RETRACE" shadow --primary "$PRIMARY" --candidate "$SLOW" \
  --out "$WORK/shadow-slow" --listen 127.0.0.1:0 --report-every 1s --mirror-queue 8
SHADOW_SLOW=$(url_of shadow_slow)

cpu_seconds() { awk '{print ($14 + $15) / 100}' "/proc/$1/stat"; }
shadow_cpu_before=$(cpu_seconds "$SHADOW_PID")
for round in $(seq 1 "$ROUNDS"); do
  for setup in direct record shadow shadow_slow; do
    case $setup in
      direct) url=$PRIMARY ;; record) url=$RECORD ;; shadow) url=$SHADOW ;; shadow_slow) url=$SHADOW_SLOW ;;
    esac
    "$RETRACE" replay "$WORK/workload.rtrace" --target "$url" -c "$CONCURRENCY" \
      --out "$WORK/run-$setup-$round.rtrace" >/dev/null 2>&1
    "$RETRACE" stats "$WORK/run-$setup-$round.rtrace" --json >"$WORK/stats-$setup-$round.json"
  done
done
sleep 2  # one --report-every for the last summary (a benchmark, not a test)
shadow_cpu=$(awk -v a="$shadow_cpu_before" -v b="$(cpu_seconds "$SHADOW_PID")" 'BEGIN{print b - a}')
python3 - "$WORK" "$ROUNDS" "$shadow_cpu" <<'PY'
import json, statistics, sys
work, rounds, shadow_cpu = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
def figure(setup, key, pct):
    values = []
    for r in range(1, rounds + 1):
        s = json.load(open(f"{work}/stats-{setup}-{r}.json"))
        values.append(s[key][pct])
    return statistics.median(values)
print("| setup | TTFT p50 ms | TTFT p99 ms | e2e p50 ms | e2e p99 ms | e2e p99 ÷ record |")
print("|---|---|---|---|---|---|")
rec99 = figure("record", "e2e_ms", "p99")
for setup in ("direct", "record", "shadow", "shadow_slow"):
    print(f"| {setup} | {figure(setup, 'ttft_ms', 'p50'):.3f} | {figure(setup, 'ttft_ms', 'p99'):.3f} | "
          f"{figure(setup, 'e2e_ms', 'p50'):.3f} | {figure(setup, 'e2e_ms', 'p99'):.3f} | "
          f"{figure(setup, 'e2e_ms', 'p99') / rec99:.3f} |")
print(f"\nTTFT p99 added by shadow over record: {figure('shadow','ttft_ms','p99') - figure('record','ttft_ms','p99'):+.3f} ms")
s = json.load(open(f"{work}/shadow/summary.json"))
pairs = s["legs"]["candidate"]["pairs"] + s["legs"]["control"]["pairs"]
print(f"shadow (two mirrors): {pairs} pairs compared, {shadow_cpu:.2f} CPU s for the whole process "
      f"(proxy, mirrors, three traces, comparison): {pairs / shadow_cpu:.0f} pairs per CPU second")
slow = json.load(open(f"{work}/shadow-slow/summary.json"))["legs"]["candidate"]
print(f"slow candidate: {slow['pairs']} compared, {slow['dropped']} dropped, {slow['errors']} errors")
PY
