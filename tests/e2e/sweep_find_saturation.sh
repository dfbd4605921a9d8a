#!/usr/bin/env bash
# release-only: timed probes of a loaded simulator (30 s in the release build); under the sanitizers the search's logic is run by sweep_find_test and the whole command by e2e.sweep_find_stable
# sweep --find rate and speed: an open-loop probe whose backlog keeps growing is cut early and counts as
# failing, never as a passing bound. `retrace serve --max-batch 1` answers about 15 requests a
# second (16 tokens at 4 ms an iteration); probes at 64 and 32 requests a second (600 requests
# each, planned to last 9 and 19 s) pile up a backlog, are cut, and the search, out of its
# two-run budget, is unresolved (exit 3) with nothing passing. The same on recorded timing: 800
# rows of a Mooncake-shaped trace (public_traces.py) replayed at 8 and 4 times their speed.
. "$(dirname "$0")/lib.sh"

"$RETRACE" import "$ROOT/traces/open-ended.jsonl" --out "$WORK/open.rtrace" 2>/dev/null
start_listening SERVE "$RETRACE" serve --listen 127.0.0.1:0 --max-batch 1 \
  --decode-step-ms 4 --decode-ms-per-sequence 0 --prefill-ms-per-token 0
status=0
"$RETRACE" sweep "$WORK/open.rtrace" --target "$SERVE_URL" --find rate --find-from 64 --slo e2e:1s \
  --requests 600 --set max_tokens=16 --set ignore_eos=true --max-probes 2 --out "$WORK/rate" \
  >"$WORK/rate.out" 2>"$WORK/rate.err" || status=$?
[[ $status == 3 ]] || { cat "$WORK/rate.err" >&2; fail "an over-saturated search out of budget: exit $status, want 3"; }
S="$WORK/rate/summary.json"
check_eq "$(json "$S" 's.probes.map(p=>p.level).join()')" "32,64" "halving after a failing start"
check_eq "$(json "$S" 's.probes.every(p=>p.oversaturated && p.verdict=="fail")')" "true" "both probes cut and failing"
check_eq "$(json "$S" 's.feasible_max')" "null" "no passing bound"
# Cut early: the requests planned after the cut were never sent.
check_eq "$(json "$S" 's.probes.every(p=>p.requests < 600)')" "true" "each cut probe sent fewer than its 600 requests"
check_contains "$WORK/rate.err" "cut: its backlog kept growing" "the probe line says it was cut"
check_contains "$WORK/rate/summary.md" "the backlog kept growing" "summary.md notes the cut"

# Recorded timing: the backlog is counted against the schedule replay itself lays out.
python3 "$ROOT/tests/production/public_traces.py" mooncake "$WORK/mooncake_full.jsonl" 0 10 >/dev/null \
  || fail "public_traces.py"
head -n 800 "$WORK/mooncake_full.jsonl" >"$WORK/mooncake.jsonl"
rm "$WORK/mooncake_full.jsonl"
"$RETRACE" import "$WORK/mooncake.jsonl" --out "$WORK/mooncake.rtrace" 2>/dev/null || fail "import of the Mooncake sample"
status=0
"$RETRACE" sweep "$WORK/mooncake.rtrace" --target "$SERVE_URL" --find speed --find-from 8 --slo e2e:1s \
  --max-probes 2 --out "$WORK/speed" >"$WORK/speed.out" 2>"$WORK/speed.err" || status=$?
[[ $status == 3 ]] || { cat "$WORK/speed.err" >&2; fail "an over-saturated speed search out of budget: exit $status, want 3"; }
S="$WORK/speed/summary.json"
check_eq "$(json "$S" 's.probes.map(p=>p.level).join()')" "4,8" "speed: halving after a failing start"
check_eq "$(json "$S" 's.probes.every(p=>p.oversaturated && p.verdict=="fail" && p.requests < 800)')" "true" \
  "speed: both probes cut early and failing"
stop "$SERVE_PID" || fail "serve exited non-zero"
echo "sweep_find_saturation: ok"
