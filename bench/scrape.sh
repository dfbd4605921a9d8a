#!/usr/bin/env bash
# What scraping the target's /metrics costs the replay client (issue 42): the same replay against
# `retrace serve` without scraping (--no-scrape), at 4 Hz (the default 250ms) and at 50 Hz (20ms),
# rounds alternating, the client's whole CPU (user + system, its children included) per run; and
# how long each scrape's GET took (the bound on how far a sample's time, stamped when the GET was
# sent, is from when the server rendered the page), read from the trace with the stock tools.
#   bench/scrape.sh [RETRACE] [ROUNDS]
set -euo pipefail
RETRACE=${1:-build/release/retrace}
ROUNDS=${2:-3}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/bench/lib.sh"
bench_workdir scrape

for i in $(seq 1 200); do
  printf '{"request":{"model":"retrace-sim","prompt":"Question %d: what is the order?","max_tokens":256,"temperature":0,"ignore_eos":true,"stream":true}}\n' "$i"
done >"$WORK/prompts.jsonl"
"$RETRACE" import "$WORK/prompts.jsonl" --out "$WORK/source.rtrace" --endpoint completions >/dev/null
"$RETRACE" serve --listen 127.0.0.1:0 >"$WORK/serve.out" 2>"$WORK/serve.err" &
PIDS+=($!)
URL=$(url_of serve)

declare -A cpu
for round in $(seq 1 "$ROUNDS"); do
  for mode in none 250ms 20ms; do
    flags=(--scrape-interval "$mode"); [[ $mode == none ]] && flags=(--no-scrape)
    out="$WORK/$mode-$round.rtrace"
    cpu[$mode]+="$(command_cpu "$WORK/log" "$RETRACE" replay "$WORK/source.rtrace" --target "$URL" -c 8 -o "$out" "${flags[@]}") "
  done
done
python3 - "$ROUNDS" "${cpu[none]}" "${cpu[250ms]}" "${cpu[20ms]}" <<'PY'
import statistics, sys
rounds = int(sys.argv[1])
none, hz4, hz50 = ([float(x) for x in a.split()] for a in sys.argv[2:5])
for name, runs in (("--no-scrape", none), ("4 Hz (250ms)", hz4), ("50 Hz (20ms)", hz50)):
    print(f"{name:14} client CPU s per run: {' '.join(f'{x:.3f}' for x in runs)}  median {statistics.median(runs):.3f}")
base = statistics.median(none)
for name, runs in (("4 Hz", hz4), ("50 Hz", hz50)):
    print(f"{name}: {100 * (statistics.median(runs) - base) / base:+.2f} % of the client's CPU (medians of {rounds})")
PY
zstd -dc "$WORK/20ms-1.rtrace" | capnp decode "$ROOT/format/trace.capnp" Record 2>/dev/null |
  grep -o 'tookNs = [0-9]*' | awk '{print $3}' | sort -n | awk '
    { v[NR] = $1 } END { printf "scrape GETs: %d, took p50 %.3f ms, p99 %.3f ms, max %.3f ms\n",
      NR, v[int(NR * 0.5) + 1] / 1e6, v[int(NR * 0.99) + 1] / 1e6, v[NR] / 1e6 }'
