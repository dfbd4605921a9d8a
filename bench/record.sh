#!/usr/bin/env bash
# Recording proxy overhead (issues 4 and 18): streamed tokens/s, TTFT, ITL and each proxy's CPU per
# streamed token, measured in one run:
#   direct  |  through `retrace record`  |  through nginx (proxy_buffering off, keepalive upstream)
#   |  through `mitmdump -w` (reverse mode, recording; when installed)
# The client is `retrace replay -c N` over a trace of streamed completions made here; TTFT and ITL
# are `retrace stats --json` of each run's trace.
#
# Two sections:
#   LATENCY_MODEL=off (default): CPU-bound, against `retrace serve --latency-model off`, at
#     CONCURRENCY (default 32). Client, server and proxy share the cores, so the fair figure is the
#     proxy's CPU µs per streamed token, as a ratio to nginx's in the same run.
#   LATENCY_MODEL=on: server-bound, against `retrace serve` with its default latency model, at each
#     of CONCURRENCY (default "32 64"), as in production: throughput through the proxy ÷ direct and
#     the TTFT and ITL the proxy adds.
#
# Usage: [LATENCY_MODEL=off|on] [CONCURRENCY="32 64"] bench/record.sh [RETRACE_BINARY] [REQUESTS]
#        [MAX_TOKENS] [ROUNDS]
# RECORD_BASELINE=OTHER_RETRACE_BINARY adds a second recording proxy run from that binary (setup
# record-base), so that a change to record is measured before/after in the same run;
# RECORD_ARGS="--threads 1" passes options to the proxy under test only (compare settings).
# Prints one markdown table per concurrency (median of ROUNDS, range of the proxy CPU figure) and,
# when bench/record_trace_bench is built, record's fair peer: nginx plus storing alone (what the
# trace thread spends per token on the recording, on one core); keeps the raw JSON reports in
# $OUT_DIR.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/bench/lib.sh"  # url_of, storing_us_per_token
RETRACE=${1:-$ROOT/build/record/retrace}
REQUESTS=${2:-320}
MAX_TOKENS=${3:-128}
ROUNDS=${4:-2}
LATENCY_MODEL=${LATENCY_MODEL:-off}
case "$LATENCY_MODEL" in
  off) CONCURRENCY=${CONCURRENCY:-32} ;;
  on) CONCURRENCY=${CONCURRENCY:-32 64} ;;
  *) echo "LATENCY_MODEL must be on or off, not '$LATENCY_MODEL'" >&2; exit 2 ;;
esac
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

start_listening() {  # NAME CMD... : start in the background (in this shell, so cleanup sees it)
  local name=$1; shift
  "$@" >"$WORK/$name.out" 2>"$WORK/$name.err" &
  PIDS+=("$!")
}

# The workload: distinct prompts, streamed completions.
for i in $(seq 1 "$REQUESTS"); do
  printf '{"request":{"model":"retrace-sim","prompt":"Request %d: tell a long story about the sea.","max_tokens":%d,"temperature":0,"stream":true,"ignore_eos":true}}\n' "$i" "$MAX_TOKENS"
done >"$WORK/workload.jsonl"
"$RETRACE" import "$WORK/workload.jsonl" --out "$WORK/workload.rtrace" --endpoint completions >/dev/null

start_listening serve "$RETRACE" serve --listen 127.0.0.1:0 --latency-model "$LATENCY_MODEL"
SERVE_PID=$!
SERVE_URL=$(url_of serve)
SERVE_PORT=${SERVE_URL##*:}

# RECORD_ARGS: more options for the recording proxy under test (not record-base), e.g. --threads 1.
# shellcheck disable=SC2086
start_listening record "$RETRACE" record --upstream "$SERVE_URL" --out "$WORK/recorded.rtrace" \
  --listen 127.0.0.1:0 --no-server-info ${RECORD_ARGS:-}
RECORD_PID=$!
RECORD_URL=$(url_of record)
if [[ -n "${RECORD_BASELINE:-}" ]]; then
  start_listening record-base "$RECORD_BASELINE" record --upstream "$SERVE_URL" \
    --out "$WORK/recorded-base.rtrace" --listen 127.0.0.1:0 --no-server-info
  RECORD_BASE_PID=$!
  RECORD_BASE_URL=$(url_of record-base)
fi

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
if [[ -n "${RECORD_BASELINE:-}" ]]; then
  SETUPS=(direct record record-base nginx)
  URLS[record-base]=$RECORD_BASE_URL
  PROXY_PIDS[record-base]=$RECORD_BASE_PID
fi
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
  "$RETRACE" replay "$WORK/workload.rtrace" --target "${URLS[$setup]}" -c 32 --limit 64 \
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
  for c in $CONCURRENCY; do
    for setup in "${SETUPS[@]}"; do
      name=$setup-c$c-$round
      proxy_before=$(cpu_seconds "${PROXY_PIDS[$setup]}")
      server_before=$(cpu_seconds "$SERVE_PID")
      "$RETRACE" replay "$WORK/workload.rtrace" --target "${URLS[$setup]}" -c "$c" \
        --out "$WORK/run-$name.rtrace" --json >/dev/null 2>&1
      echo "$(cpu_seconds "${PROXY_PIDS[$setup]}") $proxy_before $(cpu_seconds "$SERVE_PID") $server_before" \
        >"$OUT_DIR/cpu-$name.txt"
      "$RETRACE" stats "$WORK/run-$name.rtrace" --json >"$OUT_DIR/report-$name.json"
      rm -f "$WORK/run-$name.rtrace"
    done
  done
done

echo "serve --latency-model $LATENCY_MODEL, $REQUESTS requests x $MAX_TOKENS tokens, $ROUNDS rounds;" \
  "load average $(cut -d' ' -f1-3 /proc/loadavg) at the end"
for trace in "$WORK"/recorded*.rtrace; do  # the same traffic went through each recording proxy
  echo "$(basename "$trace"): $(stat -c %s "$trace") bytes (up to its last flush)"
done
# What recording adds per token besides relaying, alone: bench/record_trace_bench (built with
# -DRETRACE_BENCH=ON) on the recording, best of 3 passes on one core. nginx relays and stores
# nothing, so the fair peer of record is nginx plus this (issue 18).
FLOOR_US=$(storing_us_per_token "$RETRACE" "$WORK/recorded.rtrace" taskset -c 1 | awk '{print $2}')
[[ -n "$FLOOR_US" ]] && echo "storing floor (record_trace_bench on recorded.rtrace): $FLOOR_US us/token"
python3 - "$OUT_DIR" "$ROUNDS" "$CONCURRENCY" "${FLOOR_US:-nan}" "${SETUPS[@]}" <<'EOF'
import json, math, statistics, sys
out_dir, rounds, levels, floor, setups = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), float(sys.argv[4]), sys.argv[5:]
def median(values):  # of the values a run has: a proxy that buffers whole responses has no ITL
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else float("nan")
def spread(values):
    return f"{median(values):.2f} ({min(values):.2f}–{max(values):.2f})"
for c in levels:
    rows = {}
    for setup in setups:
        runs, proxy_us, server_us = [], [], []
        for r in range(1, rounds + 1):
            name = f"{setup}-c{c}-{r}"
            run = json.load(open(f"{out_dir}/report-{name}.json"))
            runs.append(run)
            after, before, server_after, server_before = map(float, open(f"{out_dir}/cpu-{name}.txt").read().split())
            proxy_us.append((after - before) * 1e6 / run["output_tokens"])
            server_us.append((server_after - server_before) * 1e6 / run["output_tokens"])
        rows[setup] = {
            "tps": median(run["output_tokens_per_s"] for run in runs),
            "ttft": median(run["ttft_ms"]["p50"] for run in runs),
            "ttft99": median(run["ttft_ms"]["p99"] for run in runs),
            "itl": median(run["itl_ms"]["p50"] for run in runs),
            "errors": sum(run["exchanges"] - run["completed"] for run in runs),
            "proxy": proxy_us, "server": median(server_us),
        }
    direct, nginx = rows["direct"], rows.get("nginx")
    print(f"\nconcurrency {c}:\n")
    print("| setup | tokens/s | × direct | TTFT p50 ms | added | TTFT p99 ms | added | ITL p50 ms | added "
          "| proxy CPU µs/token, median (range) | × nginx | server CPU µs/token | errors |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for setup in setups:
        r = rows[setup]
        proxy = "—" if setup == "direct" else spread(r["proxy"])
        vs_nginx = "—" if setup == "direct" or not nginx else f"{median(r['proxy']) / median(nginx['proxy']):.2f}"
        print(f"| {setup} | {r['tps']:.0f} | {r['tps'] / direct['tps']:.3f} | {r['ttft']:.3f} | "
              f"{r['ttft'] - direct['ttft']:+.3f} | {r['ttft99']:.3f} | {r['ttft99'] - direct['ttft99']:+.3f} | "
              f"{r['itl']:.3f} | {r['itl'] - direct['itl']:+.3f} | {proxy} | {vs_nginx} | {r['server']:.2f} | {r['errors']} |")
    if nginx and not math.isnan(floor):
        peer = median(nginx["proxy"]) + floor
        print(f"\nfair peer (nginx {median(nginx['proxy']):.2f} + storing {floor:.2f} = {peer:.2f} µs/token):"
              f" record ÷ peer {median(rows['record']['proxy']) / peer:.2f}")
    if "record-base" in rows:  # paired by round: the rounds move together on a loaded machine
        paired = [a / b for a, b in zip(rows["record"]["proxy"], rows["record-base"]["proxy"])]
        print(f"\nrecord ÷ record-base proxy CPU per round: {', '.join(f'{x:.2f}' for x in paired)}"
              f" (median {median(paired):.2f})")
EOF
