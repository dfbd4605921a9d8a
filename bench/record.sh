#!/usr/bin/env bash
# Recording proxy overhead (issue 4 "Performance"): streamed tokens/s and TTFT at concurrency 32
# against `retrace serve --latency-model off`, measured in one run:
#   direct  |  through `retrace record`  |  through nginx (proxy_buffering off, keepalive upstream)
#   |  through `mitmdump -w` (reverse mode, recording)
# The client is `retrace replay -c 32` over a trace of streamed completions made here.
#
# Usage: [CONCURRENCY=32] bench/record.sh [RETRACE_BINARY] [REQUESTS] [MAX_TOKENS] [ROUNDS]
# Prints one table row per setup (markdown) and keeps the raw JSON reports in $OUT_DIR.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
RETRACE=${1:-$ROOT/build/record/retrace}
REQUESTS=${2:-320}
MAX_TOKENS=${3:-128}
ROUNDS=${4:-2}
CONCURRENCY=${CONCURRENCY:-32}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/retrace-bench-record.XXXXXX")
OUT_DIR=${OUT_DIR:-$WORK}
mkdir -p "$OUT_DIR"
PIDS=()
cleanup() {
  local pid
  for pid in "${PIDS[@]+"${PIDS[@]}"}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]+"${PIDS[@]}"}"; do wait "$pid" 2>/dev/null || true; done
  [[ "$OUT_DIR" == "$WORK" ]] || rm -rf "$WORK"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() {
  local i
  for i in $(seq 1 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.1
  done
  echo "nothing listens on port $1" >&2
  return 1
}
start_listening() {  # NAME CMD... : start in the background (in this shell, so cleanup sees it)
  local name=$1; shift
  "$@" >"$WORK/$name.out" 2>"$WORK/$name.err" &
  PIDS+=("$!")
}
url_of() {  # NAME : wait for "listening on http://..." and print the URL
  local i
  for i in $(seq 1 300); do
    grep -m1 -oE 'http://[0-9.:]+' "$WORK/$1.out" 2>/dev/null && return 0
    sleep 0.1
  done
  cat "$WORK/$1.err" >&2
  return 1
}

# The workload: distinct prompts, streamed completions.
for i in $(seq 1 "$REQUESTS"); do
  printf '{"request":{"model":"retrace-sim","prompt":"Request %d: tell a long story about the sea.","max_tokens":%d,"temperature":0,"stream":true,"ignore_eos":true}}\n' "$i" "$MAX_TOKENS"
done >"$WORK/workload.jsonl"
"$RETRACE" import "$WORK/workload.jsonl" --out "$WORK/workload.rtrace" --endpoint completions >/dev/null

start_listening serve "$RETRACE" serve --listen 127.0.0.1:0 --latency-model off
SERVE_PID=$!
SERVE_URL=$(url_of serve)
SERVE_PORT=${SERVE_URL##*:}

start_listening record "$RETRACE" record --upstream "$SERVE_URL" --out "$WORK/recorded.rtrace" \
  --listen 127.0.0.1:0 --no-server-info
RECORD_PID=$!
RECORD_URL=$(url_of record)

NGINX_PORT=$(free_port)
mkdir -p "$WORK/nginx/tmp"
cat >"$WORK/nginx/nginx.conf" <<EOF
worker_processes auto;
daemon off;
pid $WORK/nginx/nginx.pid;
error_log $WORK/nginx/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $WORK/nginx/tmp/body;
  proxy_temp_path $WORK/nginx/tmp/proxy;
  fastcgi_temp_path $WORK/nginx/tmp/fastcgi;
  uwsgi_temp_path $WORK/nginx/tmp/uwsgi;
  scgi_temp_path $WORK/nginx/tmp/scgi;
  upstream sim { server 127.0.0.1:$SERVE_PORT; keepalive 64; }
  server {
    listen 127.0.0.1:$NGINX_PORT;
    location / {
      proxy_pass http://sim;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
    }
  }
}
EOF
nginx -c "$WORK/nginx/nginx.conf" -p "$WORK/nginx" >"$WORK/nginx.out" 2>"$WORK/nginx.err" &
NGINX_PID=$!
PIDS+=("$NGINX_PID")
wait_port "$NGINX_PORT"

SETUPS=(direct record nginx)
declare -A URLS=([direct]=$SERVE_URL [record]=$RECORD_URL [nginx]=http://127.0.0.1:$NGINX_PORT)
declare -A PROXY_PIDS=([direct]="" [record]=$RECORD_PID [nginx]=$NGINX_PID)
if command -v mitmdump >/dev/null; then
  MITM_PORT=$(free_port)
  mitmdump --mode "reverse:$SERVE_URL" --listen-host 127.0.0.1 --listen-port "$MITM_PORT" \
    -w "$WORK/mitm.flows" -q >"$WORK/mitm.out" 2>"$WORK/mitm.err" &
  MITM_PID=$!
  PIDS+=("$MITM_PID")
  wait_port "$MITM_PORT"
  SETUPS+=(mitmdump)
  URLS[mitmdump]=http://127.0.0.1:$MITM_PORT
  PROXY_PIDS[mitmdump]=$MITM_PID
else
  echo "mitmdump not installed (apt-get install mitmproxy): skipping it" >&2
fi

# Warm every path once (connections, page cache), then ROUNDS interleaved rounds.
for setup in "${SETUPS[@]}"; do
  "$RETRACE" replay "$WORK/workload.rtrace" --target "${URLS[$setup]}" -c "$CONCURRENCY" --limit 64 \
    --out "$WORK/warm-$setup.rtrace" --json >/dev/null 2>&1 || true
done
# CPU seconds (user + system) of a process and its children, e.g. nginx's workers: how much the
# proxy itself costs per token, a figure that holds up on a loaded machine where wall-clock
# throughput does not.
cpu_seconds() {
  local pid total=0 hz
  hz=$(getconf CLK_TCK)
  [[ -z "$1" ]] && { echo 0; return; }
  for pid in $1 $(pgrep -P "$1" || true); do
    total=$(awk -v t="$total" -v hz="$hz" '{print t + ($14 + $15) / hz}' "/proc/$pid/stat" 2>/dev/null || echo "$total")
  done
  echo "$total"
}
for round in $(seq 1 "$ROUNDS"); do
  for setup in "${SETUPS[@]}"; do
    proxy_before=$(cpu_seconds "${PROXY_PIDS[$setup]}")
    server_before=$(cpu_seconds "$SERVE_PID")
    "$RETRACE" replay "$WORK/workload.rtrace" --target "${URLS[$setup]}" -c "$CONCURRENCY" \
      --out "$WORK/run-$setup-$round.rtrace" --json >"$OUT_DIR/report-$setup-$round.json" 2>/dev/null
    echo "$(cpu_seconds "${PROXY_PIDS[$setup]}") $proxy_before $(cpu_seconds "$SERVE_PID") $server_before" \
      >"$OUT_DIR/cpu-$setup-$round.txt"
  done
done

python3 - "$OUT_DIR" "$ROUNDS" "${SETUPS[@]}" <<'EOF'
import json, statistics, sys
out_dir, rounds, setups = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def load(setup, r):
    report = json.load(open(f"{out_dir}/report-{setup}-{r}.json"))
    return report.get("stats", report)
rows = {}
for setup in setups:
    runs = [load(setup, r) for r in range(1, rounds + 1)]
    rows[setup] = {
        "tps": statistics.median(run["output_tokens_per_s"] for run in runs),
        "p50": statistics.median(run["ttft_ms"]["p50"] for run in runs),
        "p99": statistics.median(run["ttft_ms"]["p99"] for run in runs),
        "errors": sum(run["exchanges"] - run["completed"] for run in runs),
    }
    proxy_us, server_us = [], []
    for r, run in enumerate(runs, start=1):
        after, before, server_after, server_before = map(float, open(f"{out_dir}/cpu-{setup}-{r}.txt").read().split())
        tokens = run["output_tokens"]
        proxy_us.append((after - before) * 1e6 / tokens)
        server_us.append((server_after - server_before) * 1e6 / tokens)
    rows[setup]["proxy_us"] = statistics.median(proxy_us)
    rows[setup]["server_us"] = statistics.median(server_us)
direct = rows["direct"]
print("| setup | tokens/s | × direct | TTFT p50 ms | added p50 ms | TTFT p99 ms | added p99 ms | proxy CPU µs/token | server CPU µs/token | errors |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for setup in setups:
    r = rows[setup]
    print(f"| {setup} | {r['tps']:.0f} | {r['tps'] / direct['tps']:.2f} | {r['p50']:.3f} | "
          f"{r['p50'] - direct['p50']:+.3f} | {r['p99']:.3f} | {r['p99'] - direct['p99']:+.3f} | "
          f"{r['proxy_us']:.2f} | {r['server_us']:.2f} | {r['errors']} |")
EOF
