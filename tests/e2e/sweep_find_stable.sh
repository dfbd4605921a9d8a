#!/usr/bin/env bash
# sweep --find concurrency --stable 0 against `retrace serve --batch-variance`: the largest
# concurrency whose answers stay the same as the baseline's (concurrency 1) is 2, since the
# simulator's reduction split changes at batch 3 (16 splits at 1-2, 8 at 3-8) and near-tied greedy
# choices flip. The control (the baseline run again) differs in nothing. Each probe's count of
# differing outputs equals `retrace diff` on the same run files.
. "$(dirname "$0")/lib.sh"

"$RETRACE" import "$ROOT/traces/open-ended.jsonl" --out "$WORK/open.rtrace" 2>/dev/null
# A step cost of its own (not --latency-model off, whose iterations run flat out): the three
# requests of concurrency 3 then share nearly every step whatever the speed of the client and of
# the build (under ASan, flat-out steps let a request finish before the next was admitted, so
# batches of 3 were a matter of timing and the boundary moved; seen once in CI).
start_listening VARIANCE "$RETRACE" serve --listen 127.0.0.1:0 --batch-variance --decode-step-ms 0.5 \
  --decode-ms-per-sequence 0 --prefill-ms-per-token 0

status=0
"$RETRACE" sweep "$WORK/open.rtrace" --target "$VARIANCE_URL" --find concurrency --stable 0 \
  --token-ids logprobs --set stream=true --out "$WORK/stable" >"$WORK/stable.out" 2>"$WORK/stable.err" || status=$?
[[ $status == 0 ]] || { cat "$WORK/stable.err" >&2; fail "the stable search: exit $status, want 0"; }
S="$WORK/stable/summary.json"
check_eq "$(json "$S" 's.stable_max')" "2" "the largest stable concurrency"
check_eq "$(json "$S" 's.unstable_min')" "3" "the smallest concurrency whose answers differ"
check_eq "$(json "$S" 's.stable_status')" "found" "stable_status"
check_eq "$(json "$S" 's.control_rate')" "0" "the control differs in nothing"
check_eq "$(json "$S" 's.probes.map(p=>(p.control?"control ":"")+p.level).join()')" "1,control 1,2,3,4" "the probes, by load"
check_eq "$(json "$S" 's.probes.filter(p=>p.level==2)[0].differing')" "0" "nothing differs at 2"
check_contains "$WORK/stable.out" "Largest concurrency whose answers stay the same: 2" "the answer on stdout"
check_contains "$WORK/stable/report.html" "answers the same up to 2" "the page marks the stable boundary"

# The differing counts are diff's on the same files.
for level in 3 4; do
  diff_status=0
  "$RETRACE" diff "$WORK/stable/c1-r1.rtrace" "$WORK/stable/c$level-r1.rtrace" --json >"$WORK/d$level.json" || diff_status=$?
  check_eq "$diff_status" "1" "retrace diff sees concurrency $level differ"
  check_eq "$(json "$WORK/d$level.json" 's.runs[0].divergent')" \
    "$(json "$S" "s.probes.filter(p=>p.level==$level)[0].differing")" "differing at $level equals diff's count"
done

stop "$VARIANCE_PID" || fail "serve exited non-zero"
echo "sweep_find_stable: ok"
