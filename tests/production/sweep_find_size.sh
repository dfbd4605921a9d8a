#!/usr/bin/env bash
# A capacity search at the size of real traffic: probes of 20,000 requests each (20 prompts cycled)
# with --slo and --stable, so every run is read for its attainment per limit and diffed against
# the baseline, and search_history.json rewritten after each. The budget (3 runs: the baseline,
# the control, concurrency 64) ends it unresolved (exit 3) with every request counted and
# compared; the whole search's peak RSS stays within `stats` of one run plus 64 MB.
. "$(dirname "$0")/lib.sh"

REQUESTS=20000
start_listening SIM "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off
"$RETRACE" import "$ROOT/traces/open-ended.jsonl" --out "$WORK/open.rtrace" 2>/dev/null
status=0
# The search exits 3 (out of budget), which peak_rss_mb counts as a failure: GNU time measures it.
/usr/bin/time -f %M -o "$WORK/search.rss" "$RETRACE" sweep "$WORK/open.rtrace" --target "$SIM_URL" \
  --find concurrency --find-from 32 --slo e2e:60s --stable 0.01 --requests "$REQUESTS" --set max_tokens=8 \
  --max-probes 3 --out "$WORK/search" --json >"$WORK/search.out" 2>"$WORK/search.err" || status=$?
check_eq "$status" "3" "the search's exit status"
search_mb=$(( $(tail -1 "$WORK/search.rss") / 1024 ))
S="$WORK/search/summary.json"
[[ -f "$S" ]] || { cat "$WORK/search.err" >&2; fail "the search wrote no summary"; }
check_eq "$(jq -r '.status' "$S")" "unresolved" "out of budget"
check_eq "$(jq -r '.runs' "$S")" "3" "three runs"
check_eq "$(jq -r '[.probes[] | (if .control then "control " else "" end) + (.level|tostring)] | join(",")' "$S")" \
  "32,control 32,64" "the probes"
check_eq "$(jq -r '[.probes[].requests] | unique | join(",")' "$S")" "$REQUESTS" "every request of every run counted"
check_eq "$(jq -r '[.probes[].compared] | unique | join(",")' "$S")" "$REQUESTS" "every output compared"
check_eq "$(jq -r '[.probes[].met] | unique | join(",")' "$S")" "$REQUESTS" "every request met the SLO"
check_eq "$(jq -r '.feasible_max' "$S")" "64" "the largest load probed passes"
check_eq "$(jq -r '.search.runs' "$WORK/search/search_history.json")" "3" "search_history.json after the last run"
stats_mb=$(peak_rss_mb "$WORK/stats.txt" "$WORK/stats.err" "$RETRACE" stats "$WORK/search/c64-r1.rtrace")
echo "peak RSS of a 3-run search of $REQUESTS requests a run: $search_mb MB; stats of one run: $stats_mb MB" >&2
(( search_mb <= stats_mb + 64 )) || fail "the search took $search_mb MB (stats of one run: $stats_mb MB)"
stop "$SIM_PID" || fail "serve exited non-zero"
echo "sweep_find_size: ok"
