#!/usr/bin/env bash
# The lean derivation (issue 44 item 5): reading a trace whose tokens are derived (format 1.7,
# `--derive-tokens`) with `stats` and `diff`, OLD and NEW binaries alternated ROUNDS times on the
# same files, CPU seconds each; the stored trace of the same run beside it. The traces are written
# once by NEW (`replay --token-ids logprobs`: two alternatives a token) against one `retrace serve`:
# LONG answers of 16,384 tokens and MANY exchanges of 4 tokens, each stored and derived.
#
# Usage: bench/lean_read.sh OLD_RETRACE NEW_RETRACE [LONG] [MANY] [ROUNDS] [KEEP_DIR]
#   defaults: 4 answers of 16,384 tokens; 20,000 exchanges of 4 tokens; 5 rounds. With KEEP_DIR
#   the traces are left there (made only when missing), for perf.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
OLD=$1 NEW=$2 LONG=${3:-4} MANY=${4:-20000} ROUNDS=${5:-5} KEEP=${6:-}
bench_workdir lean
TRACES=${KEEP:-$WORK}
mkdir -p "$TRACES"

workload() {  # NAME COUNT MAX_TOKENS
  [[ -s $TRACES/$1-stored.rtrace && -s $TRACES/$1-derived.rtrace ]] && return 0
  [[ -n ${URL:-} ]] || {
    start SIM "$NEW" serve --listen 127.0.0.1:0 --latency-model off --max-model-len 20000 --max-batch 256
    URL=$(url_of SIM)
  }
  story_requests "$WORK/$1.jsonl" "$2" "$3"
  "$NEW" import "$WORK/$1.jsonl" --endpoint completions --out "$WORK/$1-in.rtrace" >/dev/null 2>&1
  "$NEW" replay "$WORK/$1-in.rtrace" --target "$URL" --token-ids logprobs -c 16 \
    --out "$TRACES/$1-stored.rtrace" >/dev/null 2>"$WORK/$1-stored.err"
  "$NEW" replay "$WORK/$1-in.rtrace" --target "$URL" --token-ids logprobs -c 16 --derive-tokens \
    --out "$TRACES/$1-derived.rtrace" >/dev/null 2>"$WORK/$1-derived.err"
}

report() {  # NAME
  local kind command round binary cpu
  for kind in derived stored; do
    local trace=$TRACES/$1-$kind.rtrace
    for command in stats diff; do
      local line_old="" line_new=""
      for round in $(seq "$ROUNDS"); do
        for binary in old new; do
          local exe=$OLD
          [[ $binary == new ]] && exe=$NEW
          cpu=$(reading_cpu "$exe" "$command" "$trace")
          [[ $binary == old ]] && line_old+=" $cpu" || line_new+=" $cpu"
        done
      done
      echo "$1 $kind $command CPU s: old$line_old | new$line_new (load $(cut -d' ' -f1-3 /proc/loadavg))"
    done
  done
}

workload long "$LONG" 16384
workload many "$MANY" 4
report long
report many
