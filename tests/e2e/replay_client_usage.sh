#!/usr/bin/env bash
# Every replayed run says whether the client could have set the pace (replay/client_usage.hpp):
# the client's CPU over the run travels in the run's header settings, so replay's own report,
# `stats` of the trace later (text and JSON) and the HTML report say the same; an imported or
# recorded trace, which no client replayed, says nothing of it.
. "$(dirname "$0")/lib.sh"

start_listening SIM "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off
"$RETRACE" import "$ROOT/traces/gold-intents.jsonl" --out "$WORK/gold.rtrace" >/dev/null

"$RETRACE" replay "$WORK/gold.rtrace" --target "$SIM_URL" -c 4 --threads 2 --requests 200 \
  --out "$WORK/run.rtrace" >"$WORK/replay.txt" 2>&1
check_contains "$WORK/replay.txt" "client " "replay's own report"
check_contains "$WORK/replay.txt" "of one core (busiest of 2 worker threads" "replay names its worker threads"

# The header carries the measurement; stats of the finished trace reads it back.
settings=$("$RETRACE" export "$WORK/run.rtrace" | jq -c 'select(.header) | .header.settings | fromjson | .client')
check_eq "$(jq -r '.worker_threads' <<<"$settings")" 2 "worker threads in the header"
check_eq "$(jq -r '(.cpu_s > 0) and (.wall_s > 0) and (.busiest_thread_cpu_s > 0) and (.cores >= 1)' <<<"$settings")" \
  true "the client's CPU, wall time and busiest thread, measured: $settings"

"$RETRACE" stats "$WORK/run.rtrace" --json >"$WORK/stats.json"
check_eq "$(jq -r '.client.worker_threads' "$WORK/stats.json")" 2 "stats --json reads the client back"
# The verdict follows the stated rule from the stated figures (kSaturated = 0.8).
check_eq "$(jq -r '.client | ((.busiest_thread_share >= 0.8) or (.cores_used >= 0.8 * .cores)) == .may_be_bottleneck' \
  "$WORK/stats.json")" true "the verdict agrees with the figures"
"$RETRACE" stats "$WORK/run.rtrace" >"$WORK/stats.txt"
check_contains "$WORK/stats.txt" "of one core (busiest of 2 worker threads" "stats text"

"$RETRACE" report "$WORK/run.rtrace" -o "$WORK/run.html" >/dev/null
check_contains "$WORK/run.html" "run.rtrace: the client used" "the HTML report"

# An imported plan was never replayed: no client figure, and JSON says null.
"$RETRACE" stats "$WORK/gold.rtrace" --json >"$WORK/plan.json"
check_eq "$(jq -r '.client' "$WORK/plan.json")" null "an imported trace has no client figure"
echo "ok"
