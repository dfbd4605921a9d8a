#!/usr/bin/env bash
# Two replay binaries alternated on one server, on bench/replay.sh (b)'s workload (1,500 streamed
# completions of 256 tokens, one token an event, logprobs on, -c 64, one client thread): the
# client's user and system CPU per token of each run (GNU time) and its system calls per token
# (perf stat; "-" when perf cannot count them). One server for every run, so that what differs
# between two neighbouring runs is the client; on a shared machine read the pairs, not one run.
# The figure includes the client's start-up and its trace's rewrite, as (b)'s does.
#
# Usage: bench/replay_ab.sh BEFORE AFTER [PAIRS (default 5)]
# Environment: PIN=0 to not pin (default: the server on CPU 0, the clients on CPU 1); REPLAY_FLAGS: more
# replay flags for both binaries, e.g. REPLAY_FLAGS=--derive-tokens (format 1.7's derived tokens);
# BEFORE_FLAGS, AFTER_FLAGS: for one side only (an older binary may not know a newer flag).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
[[ $# -ge 2 ]] || { echo "usage: bench/replay_ab.sh BEFORE AFTER [PAIRS]" >&2; exit 2; }
BEFORE=$1 AFTER=$2 PAIRS=${3:-5}
. "$ROOT/bench/lib.sh"
bench_workdir replay-ab
SERVER_PIN=(); CLIENT_PIN=()
if [[ "${PIN:-1}" == 1 ]]; then SERVER_PIN=(taskset -c 0); CLIENT_PIN=(taskset -c 1); fi
streamed_story_requests "$WORK/stream.jsonl" 1500
"$BEFORE" import "$WORK/stream.jsonl" --endpoint completions --out "$WORK/stream.rtrace" >/dev/null 2>&1
"${SERVER_PIN[@]}" "$BEFORE" serve --listen 127.0.0.1:0 --latency-model off >"$WORK/serve.out" 2>"$WORK/serve.err" &
PIDS+=($!)
URL=$(url_of serve)
COUNT=(); perf stat -e raw_syscalls:sys_enter true >/dev/null 2>&1 &&
  COUNT=(perf stat -x, -e raw_syscalls:sys_enter -o "$WORK/stat" --)
read -ra BEFORE_FLAGS <<<"${REPLAY_FLAGS:-} ${BEFORE_FLAGS:-}"
read -ra AFTER_FLAGS <<<"${REPLAY_FLAGS:-} ${AFTER_FLAGS:-}"
echo "before: $BEFORE; after: $AFTER; $PAIRS pairs; flags: before ${BEFORE_FLAGS[*]:-none}, after ${AFTER_FLAGS[*]:-none}; load $(cut -d' ' -f1-3 /proc/loadavg)"
for pair in $(seq 1 "$PAIRS"); do
  for side in before after; do
    binary=$BEFORE flags=("${BEFORE_FLAGS[@]}")
    [[ $side == after ]] && binary=$AFTER flags=("${AFTER_FLAGS[@]}")
    rm -f "$WORK/stat"
    "${COUNT[@]}" /usr/bin/time -f '%U %S' -o "$WORK/time" "${CLIENT_PIN[@]}" "$binary" replay "$WORK/stream.rtrace" \
      --target "$URL" --out "$WORK/run.rtrace" --force -c 64 --threads 1 --limit 1500 --json "${flags[@]}" >"$WORK/run.json"
    tokens=$(jq -r .output_tokens "$WORK/run.json")
    calls=$(awk -F, '/sys_enter/ {print $1}' "$WORK/stat" 2>/dev/null || true)
    read -r user sys <"$WORK/time"
    awk -v side="$side" -v pair="$pair" -v t="$tokens" -v u="$user" -v s="$sys" -v c="${calls:-}" \
        -v load="$(cut -d' ' -f1 /proc/loadavg)" 'BEGIN {
      printf "pair %d %-6s (load %s): %.3f us CPU a token (user %.3f, system %.3f), syscalls a token %s\n",
             pair, side, load, (u + s) * 1e6 / t, u * 1e6 / t, s * 1e6 / t, c == "" ? "-" : sprintf("%.3f", c / t) }' |
      tee -a "$WORK/pairs.txt"
  done
done
# Medians of each side's CPU a token, and of the pairs' after ÷ before (the figure to compare).
awk '{ v = $6 + 0; if ($3 == "before") b[$2] = v; else a[$2] = v }
  function median(x, n,   i, j, t) { for (i = 2; i <= n; i++) for (j = i; j > 1 && x[j - 1] > x[j]; j--) { t = x[j]; x[j] = x[j - 1]; x[j - 1] = t }
    return n % 2 ? x[(n + 1) / 2] : (x[n / 2] + x[n / 2 + 1]) / 2 }
  END { n = 0; for (p in b) if (p in a) { n++; B[n] = b[p]; A[n] = a[p]; R[n] = a[p] / b[p] }
    printf "medians over %d pairs: before %.3f, after %.3f us CPU a token; after / before %.3f\n", n, median(B, n), median(A, n), median(R, n) }' "$WORK/pairs.txt"
