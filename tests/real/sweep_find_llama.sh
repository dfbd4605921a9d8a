#!/usr/bin/env bash
# sweep --find concurrency against llama.cpp's llama-server with 4 slots (-np 4): the knee is at
# 4 ± 1. The SLO is an e2e limit a third above the p99 of a full set of slots (concurrency 4,
# measured here), so a fifth request in flight, which waits for a slot, breaks it.
. "$(dirname "$0")/lib.sh"

start_llama LLAMA -np 4 -c 4096
"$RETRACE" import "$ROOT/traces/open-ended.jsonl" --out "$WORK/open.rtrace" 2>/dev/null || fail "import"
REQUESTS=(--requests 60 --set max_tokens=48 --set ignore_eos=true)
"$RETRACE" replay "$WORK/open.rtrace" --target "$LLAMA_URL" -c 4 "${REQUESTS[@]}" --out "$WORK/full.rtrace" \
  2>"$WORK/full.err" || { cat "$WORK/full.err" >&2; fail "replay with every slot busy"; }
p99=$("$RETRACE" stats "$WORK/full.rtrace" --json | jq '.e2e_ms.p99 | round')
(( p99 > 0 )) || fail "no e2e p99 with every slot busy"
SLO="e2e:$(( p99 * 4 / 3 ))ms"
status=0
"$RETRACE" sweep "$WORK/open.rtrace" --target "$LLAMA_URL" --find concurrency --slo "$SLO" "${REQUESTS[@]}" \
  --max-probes 12 --out "$WORK/cap" >"$WORK/cap.out" 2>"$WORK/cap.err" || status=$?
[[ $status == 0 ]] || { cat "$WORK/cap.err" >&2; fail "the search: exit $status, want 0"; }
feasible=$(jq .feasible_max "$WORK/cap/summary.json")
echo "SLO $SLO; feasible_max $feasible in $(jq .runs "$WORK/cap/summary.json") runs" >&2
(( feasible >= 3 && feasible <= 5 )) || { cat "$WORK/cap.out" >&2; fail "the knee at $feasible, want 4 ± 1"; }
echo "PASS real.sweep_find_llama"
