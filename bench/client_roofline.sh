#!/usr/bin/env bash
# The streamed client's roofline (issue 44), measured in the same invocation as the client: on ONE
# `retrace serve --latency-model off` (CPU 0), replay with bench/replay_ab.sh's flags ((b)'s
# workload: 1,500 streamed completions of 256 tokens, logprobs on, -c 64, one client thread), the
# least reader of the same streams (bench/stream_floor_bench: epoll, one read per readiness,
# a clock_gettime a read, framing and SSE events counted, nothing kept; its variants with a 4 KiB
# buffer, without the stamps, and reading again at once after each read as Asio does, the
# EAGAIN replay pays) and the vLLM-bench-style Python peer (bench/peer_client.py),
# alternated on CPU 1, R rounds. They send the same request bytes: the reader and the peer the
# body replay sent (taken from a first replay run's trace, not counted).
#
# Per run: CPU a token (user + system of the whole process, as replay_ab.sh counts it, from its
# rusage; the peer's own figure without Python's start-up, as client_peer.sh counts it, is printed
# too), and a 1,000 tokens: system calls (perf stat; "-" without perf), minor page faults and
# voluntary waits (context switches). Per round: replay ÷ reader, replay ÷ (reader + the floor's
# roofline: bench/floor_peers_bench on this run's own trace, zstd of the events alone + a SAX
# parse that keeps nothing), peer ÷ reader and replay ÷ peer (issue 44's ≤ 0.15× goal). Every
# client must report the same number of tokens, or the script fails.
#
# Usage: bench/client_roofline.sh [path/to/retrace] [ROUNDS (default 3)]
# Environment: READER, FLOOR (the bench binaries; default beside RETRACE, else this tree's
# build/release/bench), REQUESTS (1500), CONCURRENCY (64), PIN=0 to not pin, PEER=0 to skip the
# Python peer (it needs /usr/bin/python3 with aiohttp), SERVE_FLAGS (default "--latency-model off":
# events as fast as serve makes them, several a read; "--latency-model on" paces them as a GPU
# would, about one event a read), REPLAY_FLAGS (more replay flags, e.g. --derive-tokens).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
RETRACE=${1:-$ROOT/build/release/retrace}
ROUNDS=${2:-3}
. "$ROOT/bench/lib.sh"
bench_workdir client-roofline
REQUESTS=${REQUESTS:-1500}
CONCURRENCY=${CONCURRENCY:-64}
beside() { local b; for b in "$(dirname "$RETRACE")/bench/$1" "$ROOT/build/release/bench/$1"; do
  [[ -x $b ]] && { echo "$b"; return; }; done; echo "bench/client_roofline.sh: no $1 built (-DRETRACE_BENCH=ON)" >&2; exit 2; }
READER=${READER:-$(beside stream_floor_bench)}
FLOOR=${FLOOR:-$(beside floor_peers_bench)}
SERVER_PIN=(); CLIENT_PIN=()
if [[ "${PIN:-1}" == 1 ]]; then SERVER_PIN=(taskset -c 0); CLIENT_PIN=(taskset -c 1); fi
if [[ "${PEER:-1}" == 1 ]] && ! /usr/bin/python3 -c 'import aiohttp' 2>/dev/null; then
  echo "bench/client_roofline.sh: the peer needs /usr/bin/python3 with aiohttp (or PEER=0)" >&2; exit 2
fi
COUNT=(); perf stat -e raw_syscalls:sys_enter true >/dev/null 2>&1 &&
  COUNT=(perf stat -x, -e raw_syscalls:sys_enter -o "$WORK/stat" --)

streamed_story_requests "$WORK/stream.jsonl" "$REQUESTS"
"$RETRACE" import "$WORK/stream.jsonl" --endpoint completions --out "$WORK/stream.rtrace" >/dev/null 2>&1
read -ra SERVE_FLAGS <<<"${SERVE_FLAGS:---latency-model off}"
"${SERVER_PIN[@]}" "$RETRACE" serve --listen 127.0.0.1:0 "${SERVE_FLAGS[@]}" >"$WORK/serve.out" 2>"$WORK/serve.err" &
PIDS+=($!)
URL=$(url_of serve)
replay=("$RETRACE" replay "$WORK/stream.rtrace" --target "$URL" --out "$WORK/run.rtrace" --force
        -c "$CONCURRENCY" --threads 1 --limit "$REQUESTS" --json ${REPLAY_FLAGS:-})

# A first replay (not counted) writes the trace the requests and the floor's roofline come from.
"${CLIENT_PIN[@]}" "${replay[@]}" >"$WORK/first.json"
"$RETRACE" export "$WORK/run.rtrace" | jq -c '.exchange | select(.) | .request | {method, target, body}' >"$WORK/requests.jsonl"
[[ $(wc -l <"$WORK/requests.jsonl") == "$REQUESTS" ]] || { echo "the first replay's trace holds $(wc -l <"$WORK/requests.jsonl") requests, not $REQUESTS" >&2; exit 1; }
BODY=$(head -1 "$WORK/requests.jsonl" | jq -r .body)
"${CLIENT_PIN[@]}" "$FLOOR" "$WORK/run.rtrace" 3 >"$WORK/floor.txt"
STORE=$(storing_us_per_token "$RETRACE" "$WORK/run.rtrace" "${CLIENT_PIN[@]}" | awk '{print $2}')
ROOF=$(sed -nE 's/^roofline \(zstd \+ parse\): ([0-9.]+) us a token$/\1/p' "$WORK/floor.txt")
[[ -n $ROOF ]] || { cat "$WORK/floor.txt" >&2; echo "no roofline from $FLOOR" >&2; exit 1; }

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(uname -sr)"
echo "replay: $RETRACE; reader: $READER; serve ${SERVE_FLAGS[*]}; $REQUESTS requests at -c $CONCURRENCY, $ROUNDS rounds; load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "request body: $BODY"
sed 's/^/floor roofline on this run'"'"'s trace: /' "$WORK/floor.txt"
echo "the floor itself (record_trace_bench beside replay: decode + store this run's events as replay does, best of 3): ${STORE:--} us a token"

# measure NAME CMD... : runs CMD on the client core under perf; its rusage (microseconds, not GNU
# time's hundredths: the reader's user CPU is a few hundredths) from its parent, a Python script
# whose own system calls (BASE_CALLS, counted once) are taken off; sets TOKENS (from the output's
# JSON, field TOKENS_FIELD), USER, SYS, CALLS; prints the run's line.
measure() {
  local name=$1 faults waits; shift
  rm -f "$WORK/stat"
  "${COUNT[@]}" /usr/bin/python3 -c "$RUSAGE" "$WORK/time" "${CLIENT_PIN[@]}" "$@" >"$WORK/$name.json" ||
    { cat "$WORK/$name.json" >&2; echo "$name failed" >&2; exit 1; }
  TOKENS=$(jq -r "$TOKENS_FIELD" "$WORK/$name.json" | tail -1)
  read -r USER SYS faults waits <"$WORK/time"
  CALLS=$(awk -F, -v base="$BASE_CALLS" '/sys_enter/ {print $1 - base}' "$WORK/stat" 2>/dev/null || true)
  awk -v n="$name" -v t="$TOKENS" -v u="$USER" -v s="$SYS" -v c="${CALLS:-}" -v f="$faults" -v w="$waits" \
      -v load="$(cut -d' ' -f1 /proc/loadavg)" 'BEGIN {
    printf "  %-22s (load %5s): %.3f us CPU a token (user %.3f, system %.3f), a 1000 tokens: %s syscalls, %.1f page faults, %.1f waits; tokens %d\n",
           n, load, (u + s) * 1e6 / t, u * 1e6 / t, s * 1e6 / t, c == "" ? "-" : sprintf("%.0f", c * 1000 / t),
           f * 1000 / t, w * 1000 / t, t }'
}
# argv: OUT CMD... : CMD with stdout passed on; OUT gets its user and system seconds, minor page
# faults and voluntary context switches; CMD's exit status is this one's.
RUSAGE='
import resource, subprocess, sys
status = subprocess.run(sys.argv[2:]).returncode
u = resource.getrusage(resource.RUSAGE_CHILDREN)
open(sys.argv[1], "w").write("%.6f %.6f %d %d\n" % (u.ru_utime, u.ru_stime, u.ru_minflt, u.ru_nvcsw))
sys.exit(status)'
BASE_CALLS=0
if [[ ${#COUNT[@]} -gt 0 ]]; then
  "${COUNT[@]}" /usr/bin/python3 -c "$RUSAGE" "$WORK/time" true
  BASE_CALLS=$(awk -F, '/sys_enter/ {print $1}' "$WORK/stat")
fi
per_token() { awk -v u="$USER" -v s="$SYS" -v t="$TOKENS" 'BEGIN {printf "%.4f", (u + s) * 1e6 / t}'; }
same_tokens() { [[ $TOKENS == "$1" ]] || { echo "$2 got $TOKENS tokens, replay $1: not the same streams" >&2; exit 1; }; }

ratios=()
for round in $(seq 1 "$ROUNDS"); do
  echo "round $round:"
  TOKENS_FIELD=.output_tokens measure replay "${replay[@]}"
  [[ $(jq -r .completed "$WORK/replay.json") == "$REQUESTS" ]] || { echo "replay did not complete every request" >&2; exit 1; }
  replay_tokens=$TOKENS; replay_us=$(per_token)
  TOKENS_FIELD=.tokens measure "reader 64 KiB" "$READER" "$URL" "$WORK/requests.jsonl" -c "$CONCURRENCY"
  same_tokens "$replay_tokens" reader; reader_us=$(per_token)
  TOKENS_FIELD=.tokens measure "reader 4 KiB" "$READER" "$URL" "$WORK/requests.jsonl" -c "$CONCURRENCY" --buffer 4096
  same_tokens "$replay_tokens" "reader 4 KiB"
  TOKENS_FIELD=.tokens measure "reader, no timestamps" "$READER" "$URL" "$WORK/requests.jsonl" -c "$CONCURRENCY" --no-timestamp
  same_tokens "$replay_tokens" "reader, no timestamps"
  TOKENS_FIELD=.tokens measure "reader, read again" "$READER" "$URL" "$WORK/requests.jsonl" -c "$CONCURRENCY" --read-again
  same_tokens "$replay_tokens" "reader, read again"
  jq -r '"    reader, read again: \(.empty_reads) of \(.reads) reads came back EAGAIN"' "$WORK/reader, read again.json"
  jq -r '"    reader: \(.reads) reads, \(.epoll_waits) epoll_waits for \(.events) events: \(.events / .reads * 100 | round / 100) events a read"' "$WORK/reader 64 KiB.json"
  peer_us=""
  if [[ "${PEER:-1}" == 1 ]]; then
    TOKENS_FIELD=.tokens measure peer /usr/bin/python3 "$ROOT/bench/peer_client.py" "$URL/v1/completions" "$BODY" "$REQUESTS" "$CONCURRENCY"
    same_tokens "$replay_tokens" peer
    peer_us=$(jq -r --arg t "$TOKENS" '.cpu_s * 1e6 / ($t | tonumber) * 10000 | round / 10000' "$WORK/peer.json")
    echo "    peer's own CPU, without Python's start-up (as client_peer.sh counts it): $peer_us us a token"
  fi
  line=$(awk -v r="$replay_us" -v d="$reader_us" -v f="$ROOF" -v p="$peer_us" -v st="${STORE:-}" 'BEGIN {
    printf "replay %.3f, reader %.3f; replay ÷ reader %.2f, replay ÷ (reader + floor roofline %.3f) %.2f", r, d, r / d, f, r / (d + f)
    if (st != "") printf ", replay - reader - floor %.3f = %.3f us", st, r - d - st
    if (p != "") printf ", peer ÷ reader %.2f, replay ÷ peer %.3f", p / d, r / p }')
  echo "  round $round: $line"
  ratios+=("$line")
done
echo "rounds: replay ÷ reader, replay ÷ (reader + roofline), peer ÷ reader, replay ÷ peer"
printf '  %s\n' "${ratios[@]}"
