#!/usr/bin/env bash
# Long prompts through the stages long_prompts.sh does not run: 200 chat requests of ~175 KB
# (~25k tokens, RAG-sized) sent by a real client (8 Python threads on http.client) through the
# `record` proxy in front of `retrace serve`, the recording replayed and the replay diffed against it;
# then `sweep` (concurrency 1 and 8) and `bisect` (concurrency 1..8, against the plain server and
# against one with --batch-variance) over the first 40 of those prompts (--limit 40: 40 rather than
# 200 keeps the four sweep runs and the probes short on 2 cores). Every request must
# complete; outcomes are counted, never timed. Run time: 16-23 s under ctest on 2 cores shared
# with four builds (load 8-13; bench/RESULTS.md, "The production-size tier").
. "$(dirname "$0")/lib.sh"

words_jsonl "$WORK/rag.jsonl" 200 175000 '{"max_tokens": 32, "temperature": 0}'
SERVE_FLAGS=(--latency-model off --max-model-len 1048576 --max-body 16000000)
start_listening SIM "$RETRACE" serve --listen 127.0.0.1:0 "${SERVE_FLAGS[@]}"
start_listening PROXY "$RETRACE" record --upstream "$SIM_URL" --listen 127.0.0.1:0 \
  --out "$WORK/recorded.rtrace"

# The client: 8 threads posting the bodies through the proxy (client.py).
python3 "$(dirname "$0")/client.py" "$PROXY_URL" "$WORK/rag.jsonl" 8 >"$WORK/client.txt"
check_eq "$(cat "$WORK/client.txt")" 200 "every long prompt answered through the proxy"
stop "$PROXY_PID" || fail "the proxy did not stop cleanly"

# The recording holds every request whole: 200 exchanges, none failed, bodies of ~175 KB.
"$RETRACE" stats "$WORK/recorded.rtrace" --json >"$WORK/recorded.json"
check_eq "$(jq -r "[.exchanges, .completed] | @tsv" "$WORK/recorded.json")" $'200\t200' \
  "the recording: every exchange, all completed"
check_eq "$("$RETRACE" export "$WORK/recorded.rtrace" | jq -r 'select(.exchange) | .exchange.request.body
  | length | if . > 175000 and . < 180000 then "whole" else "cut: \(.)" end' | sort | uniq -c |
  awk '{print $2 "=" $1}')" "whole=200" "request bodies recorded whole"

"$RETRACE" replay "$WORK/recorded.rtrace" --target "$SIM_URL" --out "$WORK/replayed.rtrace" -c 8 \
  --json >"$WORK/replayed.json"
check_eq "$(completed "$WORK/replayed.json")" 200 "every recorded request replayed"
status=0
"$RETRACE" diff "$WORK/recorded.rtrace" "$WORK/replayed.rtrace" >"$WORK/diff.txt" || status=$?
check_eq "$status" 0 "diff exit status: the replay is the recording"
check_contains "$WORK/diff.txt" "0 of 200 differ" "diff of recording and replay"
check_contains "$WORK/diff.txt" "identical 200, divergent 0" "every output compared, all identical"

# sweep: two levels, two repeats each; nothing differs (the simulator without batch variance is
# deterministic); summary.json counts 40 requests a level and every run whole.
status=0
"$RETRACE" sweep "$WORK/recorded.rtrace" --target "$SIM_URL" --limit 40 --concurrency 1,8 \
  --repeat 2 --out "$WORK/sweep" >"$WORK/sweep.out" 2>"$WORK/sweep.err" || status=$?
[[ $status == 0 ]] || { cat "$WORK/sweep.err" >&2; fail "sweep: exit $status, want 0"; }
summary=$WORK/sweep/summary.json
check_eq "$(jq -r '[.levels[] | "\(.concurrency):\(.requests):\(.differing_requests)"] | join(",")' "$summary")" \
  "1:40:0,8:40:0" "sweep levels: requests and differing requests"
check_eq "$(jq -r '[.runs[] | "\(.name):\(.exchanges):\(.errors)"] | join(",")' "$summary")" \
  "c1-r1:40:0,c1-r2:40:0,c8-r1:40:0,c8-r2:40:0" "sweep runs: every request, none failed"
check_eq "$(jq -r '[.runs[] | select(.baseline | not) | .identical] | join(",")' "$summary")" "40,40,40" \
  "sweep runs: every output identical to the baseline's"

# bisect: nothing differs on the plain server (exit 0); with batch variance the outputs change
# with the batch, and bisect names the first level that differs (exit 1).
status=0
"$RETRACE" bisect --over concurrency --range 1..8 --trace "$WORK/recorded.rtrace" --limit 40 \
  --target "$SIM_URL" --out "$WORK/plain" >"$WORK/plain.out" 2>"$WORK/plain.err" || status=$?
[[ $status == 0 ]] || { cat "$WORK/plain.out" "$WORK/plain.err" >&2; fail "bisect on the plain server: exit $status, want 0"; }
check_contains "$WORK/plain.out" "No point differs" "bisect on the plain server"
start_listening VARIANCE "$RETRACE" serve --listen 127.0.0.1:0 "${SERVE_FLAGS[@]}" --batch-variance
status=0
"$RETRACE" bisect --over concurrency --range 1..8 --trace "$WORK/recorded.rtrace" --limit 40 \
  --target "$VARIANCE_URL" --token-ids logprobs --out "$WORK/variance" >"$WORK/variance.out" \
  2>"$WORK/variance.err" || status=$?
[[ $status == 1 ]] || { cat "$WORK/variance.out" "$WORK/variance.err" >&2; fail "bisect with batch variance: exit $status, want 1"; }
check_contains "$WORK/variance.out" "boundary: concurrency" "bisect with batch variance names the boundary"
echo ok
