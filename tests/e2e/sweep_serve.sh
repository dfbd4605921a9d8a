#!/usr/bin/env bash
# sweep against `retrace serve`: without batch variance nothing differs from the baseline (exit 0)
# and 15 of the 20 gold answers match at every level; with --batch-variance outputs differ under
# load (exit 1). summary.json's per-run counts must equal `retrace diff --json` on the same files.
. "$(dirname "$0")/lib.sh"


"$RETRACE" import "$ROOT/traces/gold-intents.jsonl" --out "$WORK/gold.rtrace" 2>/dev/null
start_listening SERVE "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off \
  --answers "$ROOT/traces/gold-intents.answers.jsonl"

status=0
"$RETRACE" sweep "$WORK/gold.rtrace" --target "$SERVE_URL" --concurrency 1,4 --repeat 2 \
  --match normalized --out "$WORK/plain" >"$WORK/plain.out" 2>"$WORK/plain.err" || status=$?
[[ $status == 0 ]] || { cat "$WORK/plain.err" >&2; fail "sweep without batch variance: exit $status, want 0"; }
for f in plan.json summary.json summary.md c1-r1.rtrace c1-r2.rtrace c4-r1.rtrace c4-r2.rtrace; do
  [[ -f "$WORK/plain/$f" ]] || fail "sweep did not write $f"
done
check_contains "$WORK/plain.out" "| concurrency |" "the table is printed on stdout"
# The client's headroom, read from each run's header: one line for the sweep, one figure per run.
grep -qE '^client: busiest run \(c=[14], repeat [12]\) used [0-9]+ % of one core .*: (not the bottleneck|it may have been the bottleneck)' \
  "$WORK/plain.out" || fail "the sweep's summary states the client's headroom: $(grep -m1 '^client' "$WORK/plain.out")"
check_eq "$(json "$WORK/plain/summary.json" 's.runs.every(r=>r.client && /^used \d+ % of one core/.test(r.client.summary) && typeof r.client.cores_used=="number")')" \
  "true" "every run's client figures are in summary.json"
check_eq "$(json "$WORK/plain/summary.json" 's.client.recorded && s.client.summary.startsWith("client: busiest run")')" \
  "true" "summary.json's overall client line"
check_contains "$WORK/plain/report.html" "client: busiest run (c=" "report.html states the client's headroom"
check_eq "$(head -1 "$WORK/plain/summary.csv" | tr -d '\r' | awk -F, '{print $(NF-3)}')" "client_cores_used" "summary.csv's client columns"
[[ -n "$(sed -n 2p "$WORK/plain/summary.csv" | awk -F, '{print $(NF-3)}')" ]] || fail "summary.csv: a level without its client's figure"
# Plans, summaries and traces hold prompts and outputs: none is readable by others.
for f in plan.json summary.json summary.md c1-r1.rtrace; do
  check_eq "$(stat -c %a "$WORK/plain/$f")" 600 "mode of $f"
done
check_eq "$(json "$WORK/plain/summary.json" 's.levels.map(l=>l.concurrency).join(",")')" "1,4" "levels"
check_eq "$(json "$WORK/plain/summary.json" 's.levels.map(l=>l.differing_requests).join(",")')" "0,0" "nothing differs"
check_eq "$(json "$WORK/plain/summary.json" 's.levels.map(l=>l.requests).join(",")')" "20,20" "N"
# Gold matches: the same at every level and repeat, and what `retrace diff --expect` counts.
"$RETRACE" diff "$WORK/plain/c1-r1.rtrace" "$WORK/plain/c1-r1.rtrace" --expect --match normalized --json \
  >"$WORK/expect.json" || fail "retrace diff --expect"
matches=$(json "$WORK/expect.json" 's.baseline_matches_expected')
(( matches > 0 && matches < 20 )) || fail "the simulator's known answers should get some, not all, right: $matches"
check_eq "$(json "$WORK/plain/summary.json" 's.levels.map(l=>l.matches_expected.min+"-"+l.matches_expected.max).join(",")')" \
  "$matches-$matches,$matches-$matches" "gold matches per level equal diff --expect's count"
check_contains "$WORK/plain.out" "| $matches of 20 |" "the table says k of 20"
check_eq "$(json "$WORK/plain/summary.json" 's.runs.filter(r=>r.baseline).map(r=>r.name).join()')" "c1-r1" "baseline"

# Cross-check against diff on the same run files.
"$RETRACE" diff "$WORK/plain/c1-r1.rtrace" "$WORK/plain/c4-r1.rtrace" "$WORK/plain/c4-r2.rtrace" \
  --json >"$WORK/plain-diff.json" || fail "retrace diff says the plain runs differ"
check_eq "$(json "$WORK/plain-diff.json" 's.runs.map(r=>r.identical+"/"+r.divergent).join(",")')" \
  "$(json "$WORK/plain/summary.json" 's.runs.filter(r=>r.concurrency==4).map(r=>r.identical+"/"+r.divergent).join(",")')" \
  "summary and diff agree (plain)"

# With batch variance: open-ended prompts under load diverge.
"$RETRACE" import "$ROOT/traces/open-ended.jsonl" --out "$WORK/open.rtrace" 2>/dev/null
start_listening VARIANCE "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off --batch-variance
status=0
"$RETRACE" sweep "$WORK/open.rtrace" --target "$VARIANCE_URL" --concurrency 1,16 --repeat 2 \
  --token-ids logprobs --set stream=true --out "$WORK/variance" >"$WORK/variance.out" 2>"$WORK/variance.err" || status=$?
[[ $status == 1 ]] || { cat "$WORK/variance.err" >&2; fail "sweep with batch variance: exit $status, want 1"; }
differing=$(json "$WORK/variance/summary.json" 's.levels[1].differing_requests')
(( differing > 0 )) || fail "no request differs at concurrency 16 with batch variance"
check_eq "$(json "$WORK/variance/summary.json" 's.differs')" "true" "summary says it differs"
check_contains "$WORK/variance.out" "first divergent token" "divergences are listed"
check_contains "$WORK/variance/summary.md" "margin" "near-tie margins are shown"
check_eq "$(json "$WORK/variance/summary.json" 's.divergences.length')" \
  "$(json "$WORK/variance/summary.json" 's.runs.reduce((a,r)=>a+r.divergent,0)')" "every divergent output is listed"
diff_status=0
"$RETRACE" diff "$WORK/variance/c1-r1.rtrace" "$WORK/variance/c16-r1.rtrace" "$WORK/variance/c16-r2.rtrace" \
  --json >"$WORK/variance-diff.json" || diff_status=$?
check_eq "$diff_status" "1" "retrace diff sees the divergence too"
check_eq "$(json "$WORK/variance-diff.json" 's.runs.map(r=>r.identical+"/"+r.divergent+"/"+r.near_ties).join(",")')" \
  "$(json "$WORK/variance/summary.json" 's.runs.filter(r=>r.concurrency==16).map(r=>r.identical+"/"+r.divergent+"/"+r.near_ties).join(",")')" \
  "summary and diff agree (batch variance)"

# Refusals: an existing sweep directory, bad levels, an unreachable target.
status=0; "$RETRACE" sweep "$WORK/gold.rtrace" --target "$SERVE_URL" --out "$WORK/plain" 2>"$WORK/again.err" || status=$?
check_eq "$status" "2" "sweep into an existing sweep directory"
check_contains "$WORK/again.err" "--resume" "the refusal names --resume"
status=0; "$RETRACE" sweep "$WORK/gold.rtrace" --target "$SERVE_URL" -c 1,x --out "$WORK/bad" 2>"$WORK/bad.err" || status=$?
check_eq "$status" "2" "bad --concurrency"
check_contains "$WORK/bad.err" "'x'" "the bad level is named"
echo "ok"
