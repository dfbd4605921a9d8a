#!/usr/bin/env bash
# Peak memory of every stage that reads a run, against the two sizes production traffic grows in
# (issue 28): prompt size (40 requests of 10 KB to 700 KB, 16-token answers) and answer length (32
# streamed answers of 256 to 16,384 tokens at -c 32). For each size: `replay` (the run), `diff`
# (the run against a second run), `stats` and `report` of it; peak RSS from GNU time. The server
# is `retrace serve --latency-model off` on loopback.
#
# Usage: bench/memory.sh [RETRACE_BINARY]     (prints a Markdown table; bench/RESULTS.md keeps one)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
RETRACE=${1:-$ROOT/build/release/retrace}
. "$ROOT/bench/lib.sh"
bench_workdir memory

start_memory_serve "$RETRACE"

# requests FILE COUNT PROMPT_BYTES MAX_TOKENS
requests() {
  python3 - "$@" <<'PY'
import json, random, sys
out, count, size, max_tokens = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
words = "the of and to a in is it you that he was for on are with as his they be at one have".split()
rng = random.Random(28)
with open(out, "w") as f:
    for i in range(count):
        text, n = ["request %d:" % i], 0
        while n < size:
            w = rng.choice(words)
            text.append(w)
            n += len(w) + 1
        body = {"messages": [{"role": "user", "content": " ".join(text)}], "max_tokens": max_tokens,
                "ignore_eos": True, "temperature": 0}
        f.write(json.dumps({"request": body}) + "\n")
PY
}

peak_mib() {  # CMD... : runs it under GNU time, prints its peak RSS in MiB
  gnu_time "$@" | awk '{printf "%.0f", $2 / 1024}'
}

measure() {  # DIMENSION VALUE COUNT PROMPT_BYTES MAX_TOKENS CONCURRENCY
  local dim=$1 value=$2
  requests "$WORK/in.jsonl" "$3" "$4" "$5"
  "$RETRACE" import "$WORK/in.jsonl" --out "$WORK/in.rtrace" --force 2>/dev/null
  local replay diff stats report
  replay=$(peak_mib "$RETRACE" replay "$WORK/in.rtrace" --target "$URL" --out "$WORK/a.rtrace" --force -c "$6")
  "$RETRACE" replay "$WORK/in.rtrace" --target "$URL" --out "$WORK/b.rtrace" --force -c "$6" >/dev/null
  diff=$(peak_mib "$RETRACE" diff "$WORK/a.rtrace" "$WORK/b.rtrace")
  stats=$(peak_mib "$RETRACE" stats "$WORK/a.rtrace")
  report=$(peak_mib "$RETRACE" report "$WORK/a.rtrace" "$WORK/b.rtrace" --out "$WORK/report.html" --force)
  local mb
  mb=$(awk -v b="$(stat -c %s "$WORK/a.rtrace")" 'BEGIN {printf "%.1f", b / 1048576}')
  echo "| $dim | $value | $3 | $mb | $replay | $diff | $stats | $report |"
}

echo "retrace: $RETRACE; $(nproc) cores; load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| dimension | size | requests | run file (MiB) | replay (MiB) | diff (MiB) | stats (MiB) | report (MiB) |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
for kb in 10 100 300 700; do measure "prompt" "${kb} KB" 40 $((kb * 1000)) 16 8; done
for tokens in 256 4096 16384; do measure "answer" "$tokens tokens" 32 200 "$tokens" 32; done
