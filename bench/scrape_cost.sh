#!/usr/bin/env bash
# One /metrics scrape's CPU in the replay client, measured where little else runs (issue 42): 10
# short streamed requests at --rate 0.5 (~20 s of a nearly idle client) against `retrace serve`,
# without scraping and scraping every 10ms (~2,000 scrapes), rounds alternating; per scrape
# = (CPU scraping - CPU not) / scrapes. With a second binary, its runs interleave (before/after).
#   bench/scrape_cost.sh [RETRACE] [ROUNDS] [BASELINE]
set -euo pipefail
RETRACE=${1:-build/release/retrace}
ROUNDS=${2:-3}
BASELINE=${3:-}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/bench/lib.sh"
bench_workdir scrape_cost

for i in $(seq 1 10); do
  printf '{"request":{"model":"retrace-sim","prompt":"Question %d","max_tokens":4,"temperature":0,"stream":true}}\n' "$i"
done >"$WORK/prompts.jsonl"
"$RETRACE" import "$WORK/prompts.jsonl" --out "$WORK/source.rtrace" --endpoint completions >/dev/null
"$RETRACE" serve --listen 127.0.0.1:0 >"$WORK/serve.out" 2>"$WORK/serve.err" &
PIDS+=($!)
URL=$(url_of serve)

bins=(after)
[[ -n $BASELINE ]] && bins+=(before)
for round in $(seq 1 "$ROUNDS"); do
  for which in "${bins[@]}"; do
    bin=$RETRACE
    [[ $which == before ]] && bin=$BASELINE
    for mode in none 10ms; do
      flags=(--scrape-interval 10ms)
      [[ $mode == none ]] && flags=(--no-scrape)
      out="$WORK/$which-$mode-$round.rtrace"
      cpu=$(command_cpu "$WORK/log" "$bin" replay "$WORK/source.rtrace" --target "$URL" --rate 0.5 -o "$out" "${flags[@]}")
      scrapes=0
      [[ $mode == 10ms ]] && scrapes=$("$RETRACE" export --metrics "$out" | python3 -c '
import json, sys
print(len({json.loads(line)["t_us"] for line in sys.stdin}))')
      echo "$which $mode $round $cpu $scrapes"
    done
  done
done | tee "$WORK/runs.txt" | python3 -c '
import collections, statistics, sys
runs = collections.defaultdict(list)
for line in sys.stdin:
    print(line.rstrip(), flush=True)
    which, mode, _, cpu, scrapes = line.split()
    runs[(which, mode)].append((float(cpu), int(scrapes)))
for which in ("after", "before"):
    if (which, "none") not in runs: continue
    per = [1000 * (s[0] - n[0]) / s[1] for n, s in zip(runs[(which, "none")], runs[(which, "10ms")])]
    each = " ".join("%.3f" % p for p in per)
    print(f"{which}: per scrape {statistics.median(per):.3f} ms of client CPU (each round: {each})")
'
