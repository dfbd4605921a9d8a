#!/usr/bin/env bash
# run-serial: another llama-server on the same 2 cores (ctest -j2) stalls this one's batch steps by hundreds of ms at a time (each spins 2 threads), and a stall inside a free slot's TTFT fails it; the first version of this test, beside real.seed_experiment, had its knee moved so (issue 43)
# sweep --find concurrency against llama.cpp's llama-server with 4 slots (-np 4): the knee is at
# 4 ± 1, by the structure of a server with 4 slots rather than by its speed.
#
# Every request asks for the same number of tokens (max_tokens 96, ignore_eos), so a request that
# finds a free slot has its first token after a step or two of the batch, and one that finds the 4
# slots busy waits for a slot to finish: at concurrency 5 the requests started after each
# completion wait, in all, a whole request's time (96 steps) per round of 4 (one waits it all when
# the slots finish together; each waits a quarter when they finish evenly spread), so a quarter
# of them or more wait 24 steps or more. The SLO measures that wait in steps, the request's own
# TPOT (--slo ttft:12tpot), so it holds whatever this shared machine's speed does during the
# search (seen here: 14 times slower from one minute to the next under other engineers' builds; an
# SLO in ms calibrated at the start then failed concurrency 3): a free slot meets it (1-3 TPOTs, 7
# at the worst seen), a request waiting for a slot does not (24 or more). Hence, at attainment
# 0.85 of 32 requests a probe, 5 fails or barely passes, 6 fails (a third or more wait), 4 passes.
# e2e:60s is there too (every request that completes meets it: the --timeout), so the binding
# constraint is named from two.
# One thread (-t 1): under other engineers' builds two threads ran 3-8 times slower than one (each
# step waits for both, and one is often descheduled; bench/RESULTS.md). 4 or 5 runs (4, 8, then 6
# and 5, one of them run again when undecided): 23-30 s alone on this machine under other
# engineers' builds (load 9-12), 41-64 s beside another llama-server test; the search is bounded
# at 5 minutes.
. "$(dirname "$0")/lib.sh"

start_llama LLAMA -np 4 -c 4096 -t 1  # one thread: two wait for each other at every step
"$RETRACE" import "$ROOT/traces/open-ended.jsonl" --out "$WORK/open.rtrace" 2>/dev/null || fail "import"
SLO="ttft:12tpot,e2e:60s"
status=0
started=$SECONDS
timeout -s INT -k 30 300 "$RETRACE" sweep "$WORK/open.rtrace" --target "$LLAMA_URL" --find concurrency \
  --find-from 4 --slo "$SLO" --attainment 0.85 --max-probes 10 --requests 32 --set max_tokens=96 --set ignore_eos=true \
  --timeout 60s --out "$WORK/cap" >"$WORK/cap.out" 2>"$WORK/cap.err" || status=$?
[[ $status != 124 ]] || { cat "$WORK/cap.err" >&2; fail "the search took more than 300 s"; }
[[ $status == 0 ]] || { cat "$WORK/cap.err" >&2; fail "the search: exit $status, want 0"; }
S="$WORK/cap/summary.json"
feasible=$(jq .feasible_max "$S")
echo "feasible_max $feasible, infeasible_min $(jq .infeasible_min "$S") in $(jq .runs "$S") runs, $((SECONDS - started)) s;" \
  "attainment by concurrency: $(jq -r '[.probes[] | "\(.level)=\(.met)/\(.requests)"] | join(" ")' "$S")" >&2
(( feasible >= 3 && feasible <= 5 )) || { cat "$WORK/cap.err" "$WORK/cap.out" >&2; fail "the knee at $feasible, want 4 ± 1"; }
check_eq "$(jq -r .binding_constraint.name "$S")" "ttft/tpot" "the binding constraint: the wait for a slot"
check_eq "$(jq .binding_constraint.threshold_tpots "$S")" "12" "the binding constraint's limit"
check_contains "$WORK/cap.out" "Binding constraint: ttft/tpot ≤ 12.0: met by" "the binding constraint on stdout"
echo "PASS real.sweep_find_llama"
