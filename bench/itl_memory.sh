#!/usr/bin/env bash
# What a run's latency figures hold as it grows in tokens (issue 18, "how cost grows"): replay of
# N streamed completions of 256 tokens each (--requests N over 512 distinct ones), each token its
# own event, then `retrace stats` of that run; peak RSS and CPU of each from GNU time, and the ITL
# sample count and whether its percentiles came from the histogram (metrics/distribution.hpp).
#
# Usage: bench/itl_memory.sh [RETRACE_BINARY] [SIZES...]   (default sizes 2000 10000 30000)
#
# The server is `retrace serve` with a fast latency model (0.3 ms a batch iteration, up to 256
# sequences), so that tokens arrive one per event (with --latency-model off they coalesce and
# ITL has few samples); client on CPU 1, server on CPU 0, 128 connections. Everything on 127.0.0.1.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
RETRACE=${1:-$ROOT/build/release/retrace}
[[ $# -gt 0 ]] && shift
[[ $# -gt 0 ]] && SIZES=("$@") || SIZES=(2000 10000 30000)
. "$ROOT/bench/lib.sh"
bench_workdir itl-memory

python3 - "$WORK/input.jsonl" <<'EOF'
import json, sys
with open(sys.argv[1], "w") as out:
    for i in range(512):
        body = {"model": "retrace-sim", "prompt": f"Tell story {i}.", "max_tokens": 256,
                "temperature": 0, "stream": True, "ignore_eos": True}
        out.write(json.dumps({"request": body}) + "\n")
EOF
"$RETRACE" import "$WORK/input.jsonl" --endpoint completions --out "$WORK/input.rtrace" >/dev/null
taskset -c 0 "$RETRACE" serve --listen 127.0.0.1:0 --decode-step-ms 0.3 --decode-ms-per-sequence 0.001 \
  --prefill-ms-per-token 0 --max-batch 256 >"$WORK/serve.out" 2>"$WORK/serve.err" &
PIDS+=($!)
URL=$(url_of serve)

echo "retrace: $RETRACE; $(nproc) cores; load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| exchanges | step | CPU (s) | wall (s) | peak RSS (MiB) | ITL samples | ITL percentiles |"
echo "|---:|---|---:|---:|---:|---:|---|"
for n in "${SIZES[@]}"; do
  /usr/bin/time -f '%U %S %e %M' -o "$WORK/time.txt" taskset -c 1 "$RETRACE" replay "$WORK/input.rtrace" \
    --target "$URL" --out "$WORK/run.rtrace" --force -c 128 --threads 1 --requests "$n" --json >"$WORK/run.json"
  for step in replay stats; do
    if [[ $step == stats ]]; then
      /usr/bin/time -f '%U %S %e %M' -o "$WORK/time.txt" taskset -c 1 "$RETRACE" stats "$WORK/run.rtrace" --json >"$WORK/run.json"
    fi
    read -r user sys wall kb <"$WORK/time.txt"
    jq -r --arg n "$n" --arg step "$step" --arg cpu "$(awk -v u="$user" -v s="$sys" 'BEGIN {printf "%.1f", u + s}')" \
      --arg wall "$wall" --arg mib "$(awk -v k="$kb" 'BEGIN {printf "%.1f", k / 1024}')" \
      '"| \($n) | \($step) | \($cpu) | \($wall) | \($mib) | \(.itl_ms.count) | " +
       (if .itl_ms.relative_error then "histogram, within \((.itl_ms.relative_error * 1e6 | round) / 1e4) %" else "exact" end) + " |"' \
      "$WORK/run.json"
  done
done
