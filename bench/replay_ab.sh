#!/usr/bin/env bash
# Two replay binaries alternated on one server, on bench/replay.sh (b)'s workload (1,500 streamed
# completions of 256 tokens, one token an event, logprobs on, -c 64, one client thread): the
# client's user and system CPU per token of each run (GNU time) and its system calls per token
# (perf stat; "-" when perf cannot count them). One server for every run, so that what differs
# between two neighbouring runs is the client; on a shared machine read the pairs, not one run.
# The figure includes the client's start-up and its trace's rewrite, as (b)'s does.
#
# Usage: bench/replay_ab.sh BEFORE AFTER [PAIRS (default 5)]
# Environment: PIN=0 to not pin (default: the server on CPU 0, the clients on CPU 1); REPLAY_FLAGS,
# more flags for both replays (e.g. REPLAY_FLAGS=--derive-tokens).
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
echo "before: $BEFORE; after: $AFTER; $PAIRS pairs; flags: ${REPLAY_FLAGS:-none}; load $(cut -d' ' -f1-3 /proc/loadavg)"
for pair in $(seq 1 "$PAIRS"); do
  for side in before after; do
    binary=$BEFORE; [[ $side == after ]] && binary=$AFTER
    rm -f "$WORK/stat"
    "${COUNT[@]}" /usr/bin/time -f '%U %S' -o "$WORK/time" "${CLIENT_PIN[@]}" "$binary" replay "$WORK/stream.rtrace" \
      --target "$URL" --out "$WORK/run.rtrace" --force -c 64 --threads 1 --limit 1500 --json ${REPLAY_FLAGS:-} >"$WORK/run.json"
    tokens=$(jq -r .output_tokens "$WORK/run.json")
    calls=$(awk -F, '/sys_enter/ {print $1}' "$WORK/stat" 2>/dev/null || true)
    read -r user sys <"$WORK/time"
    awk -v side="$side" -v pair="$pair" -v t="$tokens" -v u="$user" -v s="$sys" -v c="${calls:-}" \
        -v load="$(cut -d' ' -f1 /proc/loadavg)" 'BEGIN {
      printf "pair %d %-6s (load %s): %.3f us CPU a token (user %.3f, system %.3f), syscalls a token %s\n",
             pair, side, load, (u + s) * 1e6 / t, u * 1e6 / t, s * 1e6 / t, c == "" ? "-" : sprintf("%.3f", c / t) }'
  done
done
