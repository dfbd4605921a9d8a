#!/usr/bin/env bash
# bisect --over runs: recorded runs in order (a deployment history); the first run whose outputs
# differ from BASE is found, within the probe budget.
. "$(dirname "$0")/lib.sh"

"$RETRACE" import "$ROOT/traces/open-ended.jsonl" --out "$WORK/open.rtrace" 2>/dev/null
start_listening SERVE "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off

# Runs 0-2 as deployed; from run 3 on a "deployment" shortens every answer (a real change).
for i in 0 1 2 3 4 5 6; do
  extra=()
  (( i >= 3 )) && extra=(--set max_tokens=20)
  "$RETRACE" replay "$WORK/open.rtrace" -c 4 --target "$SERVE_URL" --out "$WORK/run$i.rtrace" "${extra[@]}" \
    >/dev/null 2>"$WORK/replay$i.err" || { cat "$WORK/replay$i.err" >&2; fail "replay $i"; }
done
status=0
"$RETRACE" bisect --over runs "$WORK"/run{0,1,2,3,4,5,6}.rtrace >"$WORK/b.out" 2>"$WORK/b.err" || status=$?
[[ $status == 1 ]] || { cat "$WORK/b.out" "$WORK/b.err" >&2; fail "bisect over runs: exit $status, want 1"; }
check_contains "$WORK/b.out" "boundary: $WORK/run3.rtrace" "the first changed run"
check_contains "$WORK/b.out" "$WORK/run2.rtrace does not" "its predecessor is named"
probes=$(grep -c '^probe ' "$WORK/b.out")
(( probes <= 5 )) || fail "$probes probes over 7 runs; the budget is ceil(log2(7)) + 2 = 5"
check_contains "$WORK/b.out" "(end of output)" "the first divergent token is the shortened end"

status=0
"$RETRACE" bisect --over runs "$WORK"/run{0,1,2}.rtrace >"$WORK/same.out" 2>&1 || status=$?
check_eq "$status" "0" "identical runs: no boundary"
status=0
"$RETRACE" bisect --over runs "$WORK/run0.rtrace" 2>"$WORK/one.err" || status=$?
check_eq "$status" "2" "one run is not enough"
echo "ok"
