#!/usr/bin/env bash
# Throughput of `retrace serve`, measured by an independent client (wrk + bench/serve.lua).
#   1. --latency-model off: streamed tokens/s at concurrency 1, 16, 64 (target: >= 100k at 64).
#   2. default latency model: requests/s at concurrency 1 and 16 (continuous batching: >= 8x).
# Each point is the median of 3 runs. Usage: bench/serve.sh [path/to/retrace] [seconds per run]
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
RETRACE=${1:-${RETRACE:-$HERE/../build/sim/retrace}}
SECONDS_PER_RUN=${2:-10}
command -v wrk >/dev/null || { echo "wrk is required (apt install wrk)" >&2; exit 2; }
WORK=$(mktemp -d)
SERVER_PID=
cleanup() { [[ -n "$SERVER_PID" ]] && kill "$SERVER_PID" 2>/dev/null; wait 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT

start_server() {
  "$RETRACE" serve --listen 127.0.0.1:0 "$@" >"$WORK/out" 2>"$WORK/err" &
  SERVER_PID=$!
  for _ in $(seq 1 100); do
    URL=$(grep -oE 'http://[^ ]+' "$WORK/out" 2>/dev/null) && break
    sleep 0.1
  done
  [[ -n "${URL:-}" ]] || { cat "$WORK/err" >&2; exit 2; }
}
stop_server() { kill -TERM "$SERVER_PID"; wait "$SERVER_PID" || true; SERVER_PID=; }
served_tokens() { curl -sS "$URL/metrics" | awk '/^retrace_sim_generation_tokens_total/ {print $2}'; }
# CPU time (clock ticks) the server used: on a shared machine this tells load from cost.
server_ticks() { awk '{print $14 + $15}' "/proc/$SERVER_PID/stat"; }

# run CONNECTIONS MAX_TOKENS STREAM: prints "requests/s tokens/s server_tokens/s p50 p99 server_cpu%"
run() {
  local connections=$1 max_tokens=$2 stream=$3 before after ticks_before ticks_after
  before=$(served_tokens)
  ticks_before=$(server_ticks)
  SERVE_MAX_TOKENS=$max_tokens SERVE_STREAM=$stream \
    wrk -t"$(( connections < 2 ? 1 : 2 ))" -c"$connections" -d"${SECONDS_PER_RUN}s" --timeout 30s -s "$HERE/serve.lua" "$URL" >"$WORK/wrk"
  after=$(served_tokens)
  ticks_after=$(server_ticks)
  awk -v tokens="$max_tokens" -v served=$((after - before)) -v ticks=$((ticks_after - ticks_before)) -v hz="$(getconf CLK_TCK)" '/^RESULT/ {
      for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
      seconds = v["duration_us"] / 1e6
      if (v["errors"] + v["non2xx"] > 0) print "errors: " v["errors"] " non2xx: " v["non2xx"] > "/dev/stderr"
      printf "%.2f %.0f %.0f %s %s %.0f\n", v["requests"] / seconds, v["requests"] * tokens / seconds, served / seconds, v["p50_ms"], v["p99_ms"], 100 * ticks / hz / seconds
    }' "$WORK/wrk"
}
median3() { sort -n -k"$1" | sed -n 2p; }

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(uname -sr)"
echo "retrace: $("$RETRACE" --version)"
echo
echo "## streamed tokens/s, --latency-model off, 256-token streamed completions (median of 3 x ${SECONDS_PER_RUN}s)"
echo "| concurrency | requests/s | streamed tokens/s (client) | generated tokens/s (server) | p50 ms | p99 ms | server CPU % |"
echo "|---|---|---|---|---|---|---|"
start_server --latency-model off
for c in 1 16 64; do
  { run "$c" 256 true; run "$c" 256 true; run "$c" 256 true; } | median3 2 |
    awk -v c="$c" '{printf "| %d | %s | %s | %s | %s | %s | %s |\n", c, $1, $2, $3, $4, $5, $6}'
done
stop_server

echo
echo "## requests/s with the default latency model, 32-token completions (median of 3 x ${SECONDS_PER_RUN}s)"
echo "| concurrency | requests/s | tokens/s | p50 ms | p99 ms |"
echo "|---|---|---|---|---|"
start_server
declare -A rps
for c in 1 16; do
  line=$({ run "$c" 32 false; run "$c" 32 false; run "$c" 32 false; } | median3 1)
  rps[$c]=$(echo "$line" | awk '{print $1}')
  echo "$line" | awk -v c="$c" '{printf "| %d | %s | %s | %s | %s |\n", c, $1, $2, $4, $5}'
done
stop_server
echo
awk -v a="${rps[1]}" -v b="${rps[16]}" 'BEGIN { printf "speed-up of 16 concurrent over 1: %.1fx\n", b / a }'
