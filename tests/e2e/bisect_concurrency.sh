#!/usr/bin/env bash
# bisect --over concurrency: with batch variance a boundary is found within
# ceil(log2(range)) + 2 probes (exit 1); without it no point differs (exit 0).
. "$(dirname "$0")/lib.sh"

"$RETRACE" import "$ROOT/traces/open-ended.jsonl" --out "$WORK/open.rtrace" 2>/dev/null
start_listening VARIANCE "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off --batch-variance
start_listening PLAIN "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off

status=0
"$RETRACE" bisect --over concurrency --range 1..16 --trace "$WORK/open.rtrace" \
  --target "$VARIANCE_URL" --token-ids logprobs --set stream=true --out "$WORK/b1" >"$WORK/b1.out" 2>"$WORK/b1.err" || status=$?
[[ $status == 1 ]] || { cat "$WORK/b1.out" "$WORK/b1.err" >&2; fail "bisect with batch variance: exit $status, want 1"; }
probes=$(grep -c '^probe ' "$WORK/b1.out")
(( probes <= 6 )) || fail "$probes probes over 16 points; the budget is ceil(log2(16)) + 2 = 6"
check_contains "$WORK/b1.out" "Assuming monotonicity" "the assumption is stated"
check_contains "$WORK/b1.out" "boundary: concurrency" "the boundary is reported"
check_contains "$WORK/b1.out" "first divergent tokens at" "the boundary's first divergent tokens"
boundary=$(grep -oE 'boundary: concurrency [0-9]+' "$WORK/b1.out" | grep -oE '[0-9]+$')
(( boundary >= 2 )) || fail "boundary $boundary"
# The neighbour below the boundary was probed and did not differ (unless it is the baseline).
if (( boundary > 2 )); then
  grep -qE "^probe [0-9]+: concurrency $((boundary - 1)) .*→ same" "$WORK/b1.out" \
    || fail "the boundary's lower neighbour was not probed"
fi
check_contains "$WORK/b1.out" "concurrency $((boundary - 1)) does not" "the lower neighbour is named"
# Each probe's run names the trace it replayed (its reports said "trace unknown").
for probe in "$WORK"/b1/c*.rtrace; do
  check_eq "$("$RETRACE" export "$probe" | head -1 | jq -r '.header.settings | fromjson | .input')" \
    "$WORK/open.rtrace" "the trace $probe's settings name"
done
"$RETRACE" report "$WORK/b1/c1.rtrace" -o "$WORK/probe.html" >/dev/null
check_contains "$WORK/probe.html" "$WORK/open.rtrace" "a probe's report names its trace"

status=0
"$RETRACE" bisect --over concurrency --range 1..8 --trace "$WORK/open.rtrace" \
  --target "$PLAIN_URL" --out "$WORK/b2" >"$WORK/b2.out" 2>"$WORK/b2.err" || status=$?
[[ $status == 0 ]] || { cat "$WORK/b2.out" "$WORK/b2.err" >&2; fail "bisect without batch variance: exit $status, want 0"; }
probes=$(grep -c '^probe ' "$WORK/b2.out")
(( probes <= 5 )) || fail "$probes probes over 8 points; the budget is 5"
check_contains "$WORK/b2.out" "No point differs" "no boundary"

status=0
"$RETRACE" bisect --over concurrency --range 8..1 --trace "$WORK/open.rtrace" --target "$PLAIN_URL" \
  2>"$WORK/b3.err" || status=$?
check_eq "$status" "2" "a backwards range is an error"
echo "ok"
