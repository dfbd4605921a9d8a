#!/usr/bin/env bash
# Format 1.7's derived tokens (format/token_deriver.hpp) against 1.6's stored ones, in one run:
# the same requests replayed against one `retrace serve` (--token-ids logprobs: two alternatives
# a token) by OLD (a 1.6 binary: every token stored) and NEW (this build with --derive-tokens:
# streamed tokens derived; without it, it stores them as 1.6 did),
# then the trace bytes per token before compression, and NEW's CPU to read each trace with
# `stats`, `export` and `diff` (the trace against itself), old and new alternated ROUNDS times;
# and record's trace thread writing each trace both ways (bench/record_trace_bench, alternated).
#
# Usage: bench/derive.sh OLD_RETRACE NEW_RETRACE [LONG_ANSWERS] [MANY_EXCHANGES] [ROUNDS]
#   defaults: 4 answers of 16,384 tokens; 100,000 exchanges of 4 tokens; 3 rounds.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
OLD=$1 NEW=$2 LONG=${3:-4} MANY=${4:-100000} ROUNDS=${5:-3}
bench_workdir derive

start SIM "$NEW" serve --listen 127.0.0.1:0 --latency-model off --max-model-len 20000 --max-batch 256
URL=$(url_of SIM)

workload() {  # NAME COUNT MAX_TOKENS
  story_requests "$WORK/$1.jsonl" "$2" "$3"
  "$NEW" import "$WORK/$1.jsonl" --endpoint completions --out "$WORK/$1-in.rtrace" >/dev/null 2>&1
  local binary
  for binary in old new; do
    local exe=$OLD derive=()
    [[ $binary == new ]] && exe=$NEW derive=(--derive-tokens)
    "$exe" replay "$WORK/$1-in.rtrace" --target "$URL" --token-ids logprobs -c 16 "${derive[@]}" \
      --out "$WORK/$1-$binary.rtrace" >/dev/null 2>"$WORK/$1-$binary.err"
  done
}

report() {  # NAME
  local binary tokens bytes
  tokens=$("$NEW" stats "$WORK/$1-new.rtrace" --json | jq .output_tokens)
  for binary in old new; do
    bytes=$(zstd -dc "$WORK/$1-$binary.rtrace" | wc -c)
    printf '%s %s: format %s, %s tokens, %s bytes before compression (%.1f a token), %s after\n' "$1" "$binary" \
      "$("$NEW" inspect "$WORK/$1-$binary.rtrace" | awk '/format/ {print $2; exit}')" "$tokens" "$bytes" \
      "$(bc -l <<<"$bytes / $tokens")" "$(stat -c %s "$WORK/$1-$binary.rtrace")"
  done
  local round command
  for command in stats export diff; do
    local line_old="" line_new=""
    for round in $(seq "$ROUNDS"); do
      for binary in old new; do
        local cpu
        cpu=$(reading_cpu "$NEW" "$command" "$WORK/$1-$binary.rtrace")
        [[ $binary == old ]] && line_old+=" $cpu" || line_new+=" $cpu"
      done
    done
    echo "$1 $command CPU s: 1.6 trace$line_old | 1.7 trace$line_new"
  done
  # The write side: record's trace thread (decode, derive where 1.7, Cap'n Proto, zstd level 1).
  local writer_bench
  writer_bench=$(dirname "$NEW")/bench/record_trace_bench
  [[ -x $writer_bench ]] && "$writer_bench" "$WORK/$1-old.rtrace" "$ROUNDS" | sed "s/^/$1 writer: /"
  return 0
}

workload long "$LONG" 16384
report long
workload many "$MANY" 4
report many
