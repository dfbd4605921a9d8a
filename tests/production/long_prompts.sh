#!/usr/bin/env bash
# Prompts at the sizes of RAG, code and agent traffic: 200 of ~175 KB (~25k tokens) and 40 of
# ~700 KB (~100k tokens), through import, replay against `retrace serve` twice, diff (identical:
# the simulator is deterministic), stats and report. Every request must complete; the outcomes
# are counted, never timed.
. "$(dirname "$0")/lib.sh"

words_jsonl "$WORK/rag.jsonl" 200 175000 '{"max_tokens": 32, "temperature": 0}'
words_jsonl "$WORK/code.jsonl" 40 700000 '{"max_tokens": 32, "temperature": 0}'
cat "$WORK/rag.jsonl" "$WORK/code.jsonl" >"$WORK/prompts.jsonl"
"$RETRACE" import "$WORK/prompts.jsonl" --out "$WORK/prompts.rtrace" 2>"$WORK/import.err"
check_contains "$WORK/import.err" "imported 240 requests" "every prompt imported"

start_listening SIM "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off --max-model-len 1048576 \
  --max-body 16000000
for run in a b; do
  "$RETRACE" replay "$WORK/prompts.rtrace" --target "$SIM_URL" --out "$WORK/$run.rtrace" -c 8 \
    --json >"$WORK/$run.json"
  check_eq "$(completed "$WORK/$run.json")" 240 "run $run: every long prompt completed"
done
# The prompts went out whole: the server counted ~25k and ~100k tokens.
check_eq "$("$RETRACE" export "$WORK/a.rtrace" | jq -r 'select(.exchange) | .exchange.usage.prompt_tokens
  | if . > 90000 then "long" elif . > 20000 then "rag" else "short" end' | sort | uniq -c |
  awk '{print $2 "=" $1}' | paste -sd, -)" "long=40,rag=200" "prompt tokens the server counted"

status=0
"$RETRACE" diff "$WORK/a.rtrace" "$WORK/b.rtrace" >"$WORK/diff.txt" || status=$?
check_eq "$status" 0 "diff exit status: identical"
check_contains "$WORK/diff.txt" "0 of 240 differ" "diff of two runs"
"$RETRACE" stats "$WORK/a.rtrace" --json >"$WORK/stats.json"
check_eq "$(jq -r "[.exchanges, .completed] | @tsv" "$WORK/stats.json")" $'240\t240' "stats counts every request, all completed"
"$RETRACE" report "$WORK/a.rtrace" "$WORK/b.rtrace" --out "$WORK/report.html" >/dev/null
check_contains "$WORK/report.html" "</html>" "report written whole"
echo ok
