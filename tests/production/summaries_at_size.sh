#!/usr/bin/env bash
# The summaries at the size of real traffic (issue 28 item 4): a sweep of two runs of 50,000
# requests each (20 gold questions cycled, expected answers the simulator never gives, so every
# request is a failed question), then the run report of one run, the diff report of the two and
# the sweep's summary rebuilt from its directory. Each streams its runs: its peak RSS stays under a
# bound far below the runs' size in memory (they took 0.7, 1.4 and 2.2 GB loaded whole), its
# counts are the runs' whole counts, and its long lists are capped ("… and 49,980 more").
. "$(dirname "$0")/lib.sh"

REQUESTS=50000
start_listening SIM "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off
for i in $(seq 1 20); do
  printf '{"request":{"messages":[{"role":"user","content":"Question %d: the capital of country %d?"}],"max_tokens":4,"ignore_eos":true,"temperature":0,"stream":true},"expected":"Atlantis %d"}\n' \
    "$i" "$i" "$i"
done >"$WORK/gold.jsonl"
"$RETRACE" import "$WORK/gold.jsonl" --out "$WORK/gold.rtrace" 2>/dev/null
"$RETRACE" sweep "$WORK/gold.rtrace" --target "$SIM_URL" -c 64 --repeat 2 --requests "$REQUESTS" \
  --out "$WORK/sweep" --json >"$WORK/summary.json" 2>"$WORK/sweep.err" || true
check_eq "$(jq -r '[.runs[].exchanges] | join(",")' "$WORK/summary.json")" "$REQUESTS,$REQUESTS" \
  "the sweep's two runs, every request in each"
check_eq "$(jq -r '.levels[0].requests' "$WORK/summary.json")" "$REQUESTS" "the level's N"
check_eq "$(jq -r '[.runs[].matches_expected] | join(",")' "$WORK/summary.json")" "0,0" "no run matches a gold answer"
A="$WORK/sweep/c64-r1.rtrace" B="$WORK/sweep/c64-r2.rtrace"

stats_mb=$(peak_rss_mb "$WORK/stats.txt" "$WORK/stats.err" "$RETRACE" stats "$A")
run_mb=$(peak_rss_mb "$WORK/run.out" "$WORK/run.err" "$RETRACE" report "$A" --out "$WORK/run.html")
diff_mb=$(peak_rss_mb "$WORK/diff.out" "$WORK/diff.err" "$RETRACE" report "$A" "$B" --out "$WORK/diff.html")
sweep_mb=$(peak_rss_mb "$WORK/sweep.out" "$WORK/sweep.err" "$RETRACE" report "$WORK/sweep" --out "$WORK/sweep.html")
echo "peak RSS at $REQUESTS requests a run: stats $stats_mb MB, run report $run_mb MB, diff report $diff_mb MB," \
  "sweep summary $sweep_mb MB; pages $(( $(stat -c %s "$WORK/run.html") >> 10 )) KB," \
  "$(( $(stat -c %s "$WORK/diff.html") >> 10 )) KB, $(( $(stat -c %s "$WORK/sweep.html") >> 10 )) KB"
# The bound: what `stats` of one run takes plus 64 MB (the distributions a chart keeps: a double
# a sample, ~1.6 MB of them here; each reader's frame; the allocator), and 150 MB at most: loaded
# whole, the runs took ~14 KB a request (0.7 GB for one 50,000-request run).
for pair in "run report:$run_mb" "diff report:$diff_mb" "sweep summary:$sweep_mb"; do
  mb=${pair##*:}
  (( mb <= stats_mb + 64 && mb <= 150 )) || fail "${pair%%:*} took $mb MB (stats of one run: $stats_mb MB)"
done

count() { grep -o -- "$2" "$1" | wc -l; }
# The run report: every request counted, 20 failed questions shown and the rest counted.
check_contains "$WORK/run.html" "<td class=\"n\">0 of $REQUESTS</td>" "run report: gold matching of every request"
check_contains "$WORK/run.html" "… and 49,980 more" "run report: the failed questions beyond 20 counted"
check_eq "$(count "$WORK/run.html" '<div class="failed">')" 20 "run report: failed questions shown"
check_contains "$WORK/run.html" "<td class=\"n\">$REQUESTS</td></tr>" "run report: TTFT of every request"
# The diff report: the two runs compared whole (the simulator answers alike: nothing differs).
check_contains "$WORK/diff.html" "<td class=\"n\">0 of $REQUESTS</td><td class=\"n\">≤ 0.0060 %</td>" \
  "diff report: every request compared, none differs"
check_eq "$(count "$WORK/diff.html" '… and 49,980 more')" 2 "diff report: both runs' failed questions capped"
check_contains "$WORK/diff.html" "Divergent outputs (0)" "diff report: no divergence"
# The sweep's summary from its directory: the same counts as the sweep wrote.
check_contains "$WORK/sweep.out" "sweep.html" "report of the sweep directory"
check_eq "$(count "$WORK/sweep.html" '… and 49,980 more')" 2 "sweep report: each run's failed questions capped"
check_contains "$WORK/sweep.html" "<td class=\"n\">0 of $REQUESTS</td>" "sweep report: the level's N"
echo ok
