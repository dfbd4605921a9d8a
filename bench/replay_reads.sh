#!/usr/bin/env bash
# The reads behind bench/replay_ab.sh's syscalls a token: for each binary, ROUNDS (b) replays
# (1,500 streamed completions of 256 tokens, logprobs on, -c 64, one client thread) against one
# `retrace serve --latency-model off`, and per token the client's recvfrom calls, those that
# failed (EAGAIN: a read tried on an empty socket; the keep-alive pool's one MSG_PEEK a request
# is among them), epoll_wait and epoll_ctl calls, and all system calls (perf's syscall
# tracepoints; needs perf with tracepoint access). Counts, not pass/fail: they vary with timing.
#
# Usage: bench/replay_reads.sh BINARY... [ROUNDS (default 3)]; REPLAY_FLAGS as replay_ab.sh's.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ROUNDS=3 BINARIES=()
for arg in "$@"; do if [[ $arg =~ ^[0-9]+$ ]]; then ROUNDS=$arg; else BINARIES+=("$arg"); fi; done
[[ ${#BINARIES[@]} -ge 1 ]] || { echo "usage: bench/replay_reads.sh BINARY... [ROUNDS]" >&2; exit 2; }
. "$ROOT/bench/lib.sh"
bench_workdir replay-reads
perf stat -e syscalls:sys_enter_recvfrom true >/dev/null 2>&1 ||
  { echo "perf cannot count syscall tracepoints here (try as root, or kernel.perf_event_paranoid=-1)" >&2; exit 77; }
streamed_story_requests "$WORK/stream.jsonl" 1500
"${BINARIES[0]}" import "$WORK/stream.jsonl" --endpoint completions --out "$WORK/stream.rtrace" >/dev/null 2>&1
taskset -c 0 "${BINARIES[0]}" serve --listen 127.0.0.1:0 --latency-model off >"$WORK/serve.out" 2>"$WORK/serve.err" &
PIDS+=($!)
URL=$(url_of serve)
read -ra FLAGS <<<"${REPLAY_FLAGS:-}"
echo "flags: ${FLAGS[*]:-none}; load $(cut -d' ' -f1-3 /proc/loadavg); per token:"
for round in $(seq 1 "$ROUNDS"); do
  for binary in "${BINARIES[@]}"; do
    perf stat -x, -o "$WORK/stat" -e syscalls:sys_enter_recvfrom,syscalls:sys_enter_epoll_wait,syscalls:sys_enter_epoll_ctl,raw_syscalls:sys_enter \
      -e syscalls:sys_exit_recvfrom --filter 'ret < 0' -- \
      taskset -c 1 "$binary" replay "$WORK/stream.rtrace" --target "$URL" --out "$WORK/run.rtrace" --force \
      -c 64 --threads 1 --limit 1500 --json "${FLAGS[@]}" >"$WORK/run.json"
    awk -F, -v t="$(jq -r .output_tokens "$WORK/run.json")" -v round="$round" -v binary="$binary" '
      { n[$3] = $1 }
      END { r = n["syscalls:sys_enter_recvfrom"]; f = n["syscalls:sys_exit_recvfrom"]
        printf "round %d %s: recvfrom %.3f (failed %.3f, %.1f %%), epoll_wait %.3f, epoll_ctl %.4f, all %.3f\n", round, binary,
          r / t, f / t, r ? 100 * f / r : 0, n["syscalls:sys_enter_epoll_wait"] / t, n["syscalls:sys_enter_epoll_ctl"] / t,
          n["raw_syscalls:sys_enter"] / t }' "$WORK/stat"
  done
done
