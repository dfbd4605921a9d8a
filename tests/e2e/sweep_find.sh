#!/usr/bin/env bash
# release-only: timed probes of a loaded simulator (30 s in the release build); under the sanitizers the search's logic is run by sweep_find_test and the whole command by e2e.sweep_find_stable
# sweep --find concurrency against `retrace serve --max-batch 16` with its latency model: the SLO is
# an e2e limit a third above a full batch's p99 (measured here), so the largest concurrency that
# meets it is where waiting for one of the 16 slots starts to break it: 16 to 20, at most 12 loads
# probed (a probe whose interval straddles the target is run once more, so up to 16 runs). The search is cut by its budget first (exit 3), then continued with --resume (exit 0):
# search_history.json carries it. Then the refusals.
. "$(dirname "$0")/lib.sh"

"$RETRACE" import "$ROOT/traces/open-ended.jsonl" --out "$WORK/open.rtrace" 2>/dev/null
# A batch iteration of 4 ms + 1 ms a sequence (20 ms at a full batch: long beside a loaded
# machine's scheduling noise, the simulator's own compute a small part of it) and short answers of
# one length (16 tokens, ignore_eos), so probes stay short and a request that waits for a slot
# waits a whole answer.
start_listening SERVE "$RETRACE" serve --listen 127.0.0.1:0 --max-batch 16 \
  --decode-step-ms 4 --decode-ms-per-sequence 1 --prefill-ms-per-token 0.002
REQUESTS=(--requests 100 --set max_tokens=16 --set ignore_eos=true)

# A full batch's p99 e2e, measured on this machine now; the SLO a third above it.
"$RETRACE" replay "$WORK/open.rtrace" --target "$SERVE_URL" -c 16 "${REQUESTS[@]}" --out "$WORK/full.rtrace" \
  2>"$WORK/full.err" || { cat "$WORK/full.err" >&2; fail "replay at a full batch"; }
"$RETRACE" stats "$WORK/full.rtrace" --json >"$WORK/full.json" || fail "stats of the full batch"
p99=$(json "$WORK/full.json" 'Math.round(s.e2e_ms.p99)')
(( p99 > 0 )) || fail "no e2e p99 at a full batch: $(head -c 400 "$WORK/full.json")"
SLO="e2e:$(( p99 * 4 / 3 ))ms"
echo "full batch p99 e2e ${p99} ms; SLO $SLO" >&2

# The budget runs out first: exit 3, what was found so far, and how to go on.
status=0
"$RETRACE" sweep "$WORK/open.rtrace" --target "$SERVE_URL" --find concurrency --find-from 4 --slo "$SLO" \
  "${REQUESTS[@]}" --max-probes 4 --out "$WORK/cap" >"$WORK/cut.out" 2>"$WORK/cut.err" || status=$?
[[ $status == 3 ]] || { cat "$WORK/cut.err" >&2; fail "a search cut by --max-probes 4: exit $status, want 3"; }
check_eq "$(json "$WORK/cap/search_history.json" 's.search.runs')" "4" "search_history.json after the cut"
check_eq "$(json "$WORK/cap/summary.json" 's.status')" "unresolved" "status after the cut"
check_contains "$WORK/cut.out" "--resume" "the cut search says how to continue"
for f in search_history.json plan.json summary.json c4-r1.rtrace; do
  check_eq "$(stat -c %a "$WORK/cap/$f")" 600 "mode of $f"
done

# --resume continues it with a larger budget: the four runs are not made again.
status=0
"$RETRACE" sweep --resume "$WORK/cap" --max-probes 16 >"$WORK/cap.out" 2>"$WORK/cap.err" || status=$?
[[ $status == 0 ]] || { cat "$WORK/cap.err" >&2; fail "the resumed search: exit $status, want 0"; }
check_contains "$WORK/cap.err" "4 runs already done" "resume keeps the finished runs"
S="$WORK/cap/summary.json"
feasible=$(json "$S" 's.feasible_max')
runs=$(json "$S" 's.runs')
probes=$(json "$S" 's.probes.length')
echo "feasible_max $feasible, infeasible_min $(json "$S" 's.infeasible_min'): $probes loads probed in $runs runs" >&2
(( feasible >= 16 && feasible <= 20 )) || { cat "$WORK/cap.out" >&2; fail "feasible_max $feasible, want 16 to 20"; }
(( probes <= 12 )) || fail "$probes loads probed, want at most 12"
check_eq "$(json "$S" 's.probes.reduce((a,p)=>a+p.runs.length,0)')" "$runs" "every run belongs to one probe"
check_eq "$(json "$S" 's.infeasible_min > s.feasible_max')" "true" "infeasible_min lies above feasible_max"
check_eq "$(json "$S" 's.binding_constraint.name')" "e2e" "the binding constraint"
check_eq "$(json "$S" 's.probes.length == new Set(s.probes.map(p=>p.level)).size')" "true" "one probe per load"
check_eq "$(json "$S" 's.probes.slice(0,3).map(p=>p.level).join()')" "4,8,16" "doubling from --find-from 4"
check_eq "$(json "$S" 's.probes.filter(p=>p.level<=16).every(p=>p.verdict!="fail")')" "true" "no fail at a full batch or less"
ls "$WORK/cap"/c*-r1.rtrace | wc -l | grep -qx "$(json "$S" 's.probes.length')" || fail "a trace per probe"
# The probe lines on stderr, the summary on stdout, the page with its charts.
check_contains "$WORK/cap.err" "met the SLOs" "a line per probe"
check_contains "$WORK/cap.out" "Largest concurrency meeting the SLOs: $feasible" "the answer on stdout"
check_contains "$WORK/cap/summary.md" "| concurrency | order |" "summary.md's probe table"
check_eq "$(head -1 "$WORK/cap/summary.csv" | cut -d, -f1-3)" "concurrency,control,order" "summary.csv's header"
check_contains "$WORK/cap/report.html" 'class="boundary"' "the page marks the boundary"
check_contains "$WORK/cap/report.html" 'class="whisker"' "attainment carries its intervals"
check_contains "$WORK/cap/report.html" "Throughput (requests per second)" "throughput beside it"

# Resuming a finished search makes no run and gives the same answer.
"$RETRACE" sweep --resume "$WORK/cap" --json >"$WORK/again.json" 2>"$WORK/again.err" || fail "resume of a finished search"
check_eq "$(json "$WORK/again.json" 's.runs')" "$runs" "no run made again"
check_eq "$(json "$WORK/again.json" 's.feasible_max')" "$feasible" "the same answer"

# Refusals: no SLO, a bad axis, a bad SLO, --find with levels, a flag that would change a search on --resume.
refuse() {  # refuse WHAT TEXT ARGS...
  local what=$1 text=$2 status=0; shift 2
  "$RETRACE" sweep "$@" >/dev/null 2>"$WORK/refused.err" || status=$?
  check_eq "$status" "2" "$what: exit"
  check_contains "$WORK/refused.err" "$text" "$what: the message"
}
refuse "no SLO" "--slo" "$WORK/open.rtrace" --target "$SERVE_URL" --find concurrency --out "$WORK/x1"
refuse "a bad axis" "concurrency, rate or speed" "$WORK/open.rtrace" --target "$SERVE_URL" --find load --slo e2e:1s --out "$WORK/x2"
refuse "a bad SLO" "ttft" "$WORK/open.rtrace" --target "$SERVE_URL" --find rate --slo ttft:fast --out "$WORK/x3"
refuse "levels" "--find-from" "$WORK/open.rtrace" --target "$SERVE_URL" --find concurrency -c 1,2 --slo e2e:1s --out "$WORK/x4"
refuse "repeats" "--repeat" "$WORK/open.rtrace" --target "$SERVE_URL" --find concurrency --repeat 3 --slo e2e:1s --out "$WORK/x6"
refuse "a bad precision" "--precision" "$WORK/open.rtrace" --target "$SERVE_URL" --find rate --slo e2e:1s --precision 150% --out "$WORK/x5"
refuse "a changed SLO on resume" "--slo" --resume "$WORK/cap" --slo e2e:1s
refuse "an existing search" "--resume" "$WORK/open.rtrace" --target "$SERVE_URL" --find concurrency --slo e2e:1s --out "$WORK/cap"
[[ ! -e "$WORK/x1" && ! -e "$WORK/x3" ]] || fail "a refused search left a directory"

stop "$SERVE_PID" || fail "serve exited non-zero"
echo "sweep_find: ok"
