#!/usr/bin/env bash
# What scraping the target's /metrics costs the replay client (issue 42): the same replay against
# `retrace serve` without scraping (--no-scrape), at 4 Hz (the default 250ms) and at 50 Hz (20ms),
# rounds alternating, the client's whole CPU (user + system, its children included) per run; and
# how long each scrape's GET took (the bound on how far a sample's time, stamped when the GET was
# sent, is from when the server rendered the page), read from the trace with the stock tools.
#   bench/scrape.sh [RETRACE] [ROUNDS]
# SCRAPE_BASELINE=BINARY: a second build's 4 Hz run in the same rounds (before/after a change).
# SCRAPE_REQUESTS=N (default 200): the run's length (each ~0.48 s of streaming at -c 8).
# SCRAPE_50HZ=0: leave the 50 Hz runs out.
# SCRAPE_CONCURRENCY=N (default 8), SCRAPE_TOKENS=N (default 256): the load (e.g. 16 and 1024 for a
# loaded client: its CPU grows with the tokens it reads at once). The per-scrape CPU printed is
# (median 4 Hz - median --no-scrape) / the 4 Hz runs' scrapes.
set -euo pipefail
RETRACE=${1:-build/release/retrace}
ROUNDS=${2:-3}
BASELINE=${SCRAPE_BASELINE:-}
REQUESTS=${SCRAPE_REQUESTS:-200}
CONCURRENCY=${SCRAPE_CONCURRENCY:-8}
TOKENS=${SCRAPE_TOKENS:-256}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/bench/lib.sh"
bench_workdir scrape

for i in $(seq 1 "$REQUESTS"); do
  printf '{"request":{"model":"retrace-sim","prompt":"Question %d: what is the order?","max_tokens":%d,"temperature":0,"ignore_eos":true,"stream":true}}\n' "$i" "$TOKENS"
done >"$WORK/prompts.jsonl"
"$RETRACE" import "$WORK/prompts.jsonl" --out "$WORK/source.rtrace" --endpoint completions >/dev/null
"$RETRACE" serve --listen 127.0.0.1:0 >"$WORK/serve.out" 2>"$WORK/serve.err" &
PIDS+=($!)
URL=$(url_of serve)

modes=(none 250ms)
[[ ${SCRAPE_50HZ:-1} == 1 ]] && modes+=(20ms)
[[ -n $BASELINE ]] && modes+=(baseline)
declare -A cpu
for round in $(seq 1 "$ROUNDS"); do
  for mode in "${modes[@]}"; do
    bin=$RETRACE flags=(--scrape-interval "$mode")
    [[ $mode == none ]] && flags=(--no-scrape)
    [[ $mode == baseline ]] && bin=$BASELINE flags=(--scrape-interval 250ms)
    out="$WORK/$mode-$round.rtrace"
    cpu[$mode]+="$(command_cpu "$WORK/log" "$bin" replay "$WORK/source.rtrace" --target "$URL" -c "$CONCURRENCY" -o "$out" "${flags[@]}") "
  done
done
scrapes=$("$RETRACE" export --metrics "$WORK/250ms-1.rtrace" | python3 -c '
import json, sys
print(len({json.loads(line)["t_us"] for line in sys.stdin}))')
python3 - "$ROUNDS" "$scrapes" "${cpu[none]}" "${cpu[250ms]}" "${cpu[20ms]:-}" "${cpu[baseline]:-}" <<'PY'
import statistics, sys
rounds = int(sys.argv[1])
scrapes = int(sys.argv[2])
del sys.argv[2]
named = [("--no-scrape", "none"), ("4 Hz (250ms)", "4 Hz"), ("50 Hz (20ms)", "50 Hz"), ("4 Hz, baseline", "4 Hz, baseline")]
runs = {short: [float(x) for x in text.split()] for (_, short), text in zip(named, sys.argv[2:6]) if text.strip()}
for name, short in named:
    if short in runs:
        print(f"{name:16} client CPU s per run: {' '.join(f'{x:.3f}' for x in runs[short])}  median {statistics.median(runs[short]):.3f}")
base = statistics.median(runs["none"])
for short, these in runs.items():
    if short != "none":
        print(f"{short}: {100 * (statistics.median(these) - base) / base:+.2f} % of the client's CPU (medians of {rounds})")
four_hz = statistics.median(runs["4 Hz"])
print(f"4 Hz: {scrapes} scrapes a run, {1000 * (four_hz - base) / scrapes:.3f} ms of client CPU a scrape")
PY
last=$([[ ${SCRAPE_50HZ:-1} == 1 ]] && echo 20ms || echo 250ms)
zstd -dc "$WORK/$last-1.rtrace" | capnp decode "$ROOT/format/trace.capnp" Record 2>/dev/null |
  grep -o 'tookNs = [0-9]*' | awk '{print $3}' | sort -n | awk -v mode="$last" '
    { v[NR] = $1 } END { printf "scrape GETs (%s): %d, took p50 %.3f ms, p99 %.3f ms, max %.3f ms\n",
      mode, NR, v[int(NR * 0.5) + 1] / 1e6, v[int(NR * 0.99) + 1] / 1e6, v[NR] / 1e6 }'
