#!/usr/bin/env bash
# release-only: timed probes of a loaded simulator (30 s in the release build); under the sanitizers the search's logic is run by sweep_find_test and the whole command by e2e.sweep_find_stable
# sweep --find speed on an imported public-trace sample (the Mooncake shape that
# tests/production/public_traces.py writes, its first 40 rows, about 6 s of its clock): the fastest replay of its recorded
# timing at which 95 % of requests still meet a TTFT limit, against `retrace serve --max-batch 4`.
# Faster replays pile requests up behind the four slots; the search doubles from speed 2, then
# bisects to --precision.
. "$(dirname "$0")/lib.sh"

python3 "$ROOT/tests/production/public_traces.py" mooncake "$WORK/mooncake_full.jsonl" 0 10 >/dev/null \
  || fail "public_traces.py"
head -n 40 "$WORK/mooncake_full.jsonl" >"$WORK/mooncake.jsonl"
rm "$WORK/mooncake_full.jsonl"
"$RETRACE" import "$WORK/mooncake.jsonl" --out "$WORK/mooncake.rtrace" 2>"$WORK/import.err" \
  || { cat "$WORK/import.err" >&2; fail "import of the Mooncake sample"; }
start_listening SERVE "$RETRACE" serve --listen 127.0.0.1:0 --max-batch 4 \
  --decode-step-ms 1 --decode-ms-per-sequence 0.5 --prefill-ms-per-token 0.02
status=0
"$RETRACE" sweep "$WORK/mooncake.rtrace" --target "$SERVE_URL" --find speed --find-from 2 --slo ttft:250ms \
  --precision 25% --max-probes 12 --out "$WORK/speed" >"$WORK/speed.out" 2>"$WORK/speed.err" || status=$?
[[ $status == 0 ]] || { cat "$WORK/speed.err" "$WORK/speed.out" >&2; fail "sweep --find speed: exit $status, want 0"; }
S="$WORK/speed/summary.json"
echo "feasible_max $(json "$S" 's.feasible_max'), infeasible_min $(json "$S" 's.infeasible_min') in $(json "$S" 's.runs') runs" >&2
check_eq "$(json "$S" 's.axis')" "speed" "the axis"
check_eq "$(json "$S" 's.feasible_max >= 2 && s.infeasible_min > s.feasible_max')" "true" "a bracket"
check_eq "$(json "$S" 's.probes.filter(p=>p.order<=2).map(p=>p.level).join()')" "2,4" "doubling from --find-from 2"
check_eq "$(json "$S" '(s.infeasible_min - s.feasible_max) <= 0.25 * s.feasible_max + 1e-9')" "true" "resolved to --precision"
check_eq "$(json "$S" 's.binding_constraint.name')" "ttft" "the binding constraint"
check_eq "$(json "$S" 's.probes.every(p=>p.requests==40*p.runs.length)')" "true" "every run replays the whole sample"
check_contains "$WORK/speed.out" "Largest speed meeting the SLOs" "the answer on stdout"
ls "$WORK/speed"/speed2-r1.rtrace >/dev/null || fail "the first probe's trace"
stop "$SERVE_PID" || fail "serve exited non-zero"
echo "sweep_find_speed: ok"
