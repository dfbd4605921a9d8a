#!/usr/bin/env bash
# Memory per streamed token in flight (issue 44 item 4): 64 streamed answers of 16,384 tokens, all
# in flight at once (`replay -c 64`) against `retrace serve`, with `--token-ids off` and `auto`.
# A replay holds each body compressed as it arrives (net/arrived_blocks.hpp), so its peak resident
# set over a one-request replay's, divided by the tokens in flight, stays under a bound set from
# bench/inflight.sh's measurement with margin (bench/RESULTS.md, "Memory per streamed token in
# flight") — where holding the raw events would take 280-500 bytes a token. Peak RSS from the
# kernel (getrusage of the child, peak_rss_mb); no timing is asserted.
. "$(dirname "$0")/lib.sh"

STREAMS=64
TOKENS=16384
# Bytes a token in flight, in total: measured 30 (off) and 80-83 (auto: logprobs with 2
# alternatives, ~41 bytes a token compressed) at -c 64 once one long exchange is decoded at a
# time and its blocks are given back when freed (bench/RESULTS.md, "One long exchange decoded at
# a time"); before that 38-56 and 78-98, and holding the raw events took 307-313 and 546.
declare -A BOUND=([off]=50 [auto]=100)

start_listening SIM "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off --max-model-len 32768
requests() {  # OUT COUNT MAX_TOKENS
  for i in $(seq 1 "$2"); do
    printf '{"request": {"model": "retrace-sim", "messages": [{"role": "user", "content": "think about problem %d"}], "max_tokens": %d, "ignore_eos": true, "temperature": 0, "stream": true}}\n' "$i" "$3"
  done >"$1"
}
requests "$WORK/one.jsonl" 1 16
requests "$WORK/in.jsonl" "$STREAMS" "$TOKENS"
"$RETRACE" import "$WORK/one.jsonl" --out "$WORK/one.rtrace" 2>/dev/null
"$RETRACE" import "$WORK/in.jsonl" --out "$WORK/in.rtrace" 2>/dev/null
base=$(peak_rss_mb "$WORK/one.txt" "$WORK/one.err" \
  "$RETRACE" replay "$WORK/one.rtrace" --target "$SIM_URL" --out "$WORK/one_out.rtrace" -c 1)

for ids in off auto; do
  peak=$(peak_rss_mb "$WORK/$ids.json" "$WORK/$ids.err" "$RETRACE" replay "$WORK/in.rtrace" --target "$SIM_URL" \
    --out "$WORK/$ids.rtrace" -c "$STREAMS" --token-ids "$ids" --json)
  check_eq "$(completed "$WORK/$ids.json")" "$STREAMS" "every stream completed (--token-ids $ids)"
  tokens=$(jq -r .output_tokens "$WORK/$ids.json")
  check_eq "$tokens" "$((STREAMS * TOKENS))" "every token of every stream was decoded (--token-ids $ids)"
  per_token=$(( (peak - base) * 1048576 / tokens ))
  echo "--token-ids $ids: peak ${peak} MB over a one-request replay's ${base} MB: $per_token bytes a token in flight"
  (( per_token <= BOUND[$ids] )) ||
    fail "--token-ids $ids: $per_token bytes a token in flight, over the bound of ${BOUND[$ids]} (peak $peak MB, base $base MB)"
done
echo ok
