#!/usr/bin/env bash
# The client's roofline (issue 33): the most requests and streamed tokens one client core sustains,
# against a server that costs nothing — nginx answering every request with precomputed bytes
# (`return 200`, no upstream), on a core of its own — at 1 to 1,024 connections, streamed and not,
# with and without logprobs; and the same for `retrace record` as a proxy in front of it.
#
# What is printed per point: the wall-clock rates, the client's CPU share of its one core, and the
# capacity of one client core, units per CPU second (units ÷ the client's user + system CPU over
# the measured run, as replay reports it in "client"; for record, its CPU from /proc around the
# point over the driving replay's duration). When
# the client is CPU-bound (its share near 100 %) the two agree; on a shared or loaded machine the
# wall-clock rates fall with the load and the per-CPU-second capacity is the figure to read (it is
# what docs/scale-out.md's "What one client does" quotes).
#
# Usage: bench/roofline.sh [path/to/retrace]
# Environment: CONNECTIONS ("1 16 64 256 1024"), REQUESTS (per point, default 2000, at least 4 per
# connection), TOKENS (256 per streamed answer), PIN (1: nginx on CPU 0, the client or proxy on CPU
# 1; default 1 when the machine has 2 or more cores).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
RETRACE=${1:-$ROOT/build/release/retrace}
. "$ROOT/bench/lib.sh"
bench_workdir roofline
[[ -n "${KEEP:-}" ]] && trap - EXIT
CONNECTIONS=${CONNECTIONS:-1 16 64 256 1024}
REQUESTS=${REQUESTS:-2000}
TOKENS=${TOKENS:-256}
PIN=${PIN:-$([[ $(nproc) -ge 2 ]] && echo 1 || echo 0)}
SERVER_PIN=(); CLIENT_PIN=()
if [[ "$PIN" == 1 ]]; then SERVER_PIN=(taskset -c 0); CLIENT_PIN=(taskset -c 1); fi
command -v nginx >/dev/null || { echo "bench/roofline.sh: needs nginx (scripts/deps.sh installs nginx-light)" >&2; exit 2; }

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(uname -sr)"
echo "retrace: $RETRACE ($("$RETRACE" -V | head -1)); pinned: $PIN; load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"

# The precomputed answers: OpenAI completions, one token an event, usage in the last event.
python3 - "$WORK" "$TOKENS" <<'EOF'
import json, sys
work, tokens = sys.argv[1], int(sys.argv[2])
words = ["the", " quick", " brown", " fox", " jumps", " over", " a", " lazy", " dog", "."]
def event(i, logprobs):
    word = words[i % len(words)]
    choice = {"index": 0, "text": word, "finish_reason": "length" if i == tokens - 1 else None}
    if logprobs:
        choice["logprobs"] = {"tokens": [word], "token_logprobs": [-0.25],
                              "top_logprobs": [{word: -0.25, " cat": -1.75}], "text_offset": [i]}
    return "data: " + json.dumps({"id": "cmpl-1", "object": "text_completion", "model": "retrace-sim",
                                  "choices": [choice]}, separators=(",", ":")) + "\n\n"
usage = {"prompt_tokens": 5, "completion_tokens": tokens, "total_tokens": tokens + 5}
for name, logprobs in (("plain", False), ("logprobs", True)):
    body = "".join(event(i, logprobs) for i in range(tokens))
    body += "data: " + json.dumps({"id": "cmpl-1", "object": "text_completion", "model": "retrace-sim",
                                   "choices": [], "usage": usage}, separators=(",", ":")) + "\n\ndata: [DONE]\n\n"
    open(f"{work}/{name}.sse", "w").write(body)
text = "".join(words[i % len(words)] for i in range(tokens))
open(f"{work}/short.json", "w").write(json.dumps(
    {"id": "cmpl-1", "object": "text_completion", "model": "retrace-sim",
     "choices": [{"index": 0, "text": text[:20], "finish_reason": "length"}],
     "usage": {"prompt_tokens": 5, "completion_tokens": 4, "total_tokens": 9}}, separators=(",", ":")))
for mode, stream in (("plain", True), ("logprobs", True), ("short", False)):
    body = {"model": "retrace-sim", "prompt": "Tell a long story.", "max_tokens": tokens if stream else 4,
            "temperature": 0, "stream": stream}
    open(f"{work}/{mode}.jsonl", "w").write(json.dumps({"request": body}) + "\n")
EOF

# One nginx, one port per answer; every other path 404 but /v1/models (the preflight reads it).
declare -A PORTS
mkdir -p "$WORK/nginx/tmp"
chmod 755 "$WORK"  # nginx's workers run as another user when started as root: the answers must be readable
servers=""
for mode in plain logprobs short; do
  PORTS[$mode]=$(free_port)
  type=text/event-stream; [[ $mode == short ]] && type=application/json
  file=$WORK/$mode.sse; [[ $mode == short ]] && file=$WORK/short.json
  # The answer is a file: error_page turns the POST into an internal GET of it (nginx's `return`
  # cannot hold a body this long).
  servers+="
  server {
    listen 127.0.0.1:${PORTS[$mode]};
    location = /v1/models { default_type application/json;
      return 200 '{\"object\":\"list\",\"data\":[{\"id\":\"retrace-sim\",\"object\":\"model\",\"owned_by\":\"roofline\"}]}'; }
    location = /v1/completions { error_page 405 =200 /answer/$(basename "$file"); return 405; }
    location /answer/ { internal; alias $WORK/; default_type $type; }
    location / { return 404; }
  }"
done
cat >"$WORK/nginx/nginx.conf" <<EOF
worker_processes 1;
daemon off;
pid $WORK/nginx/nginx.pid;
error_log $WORK/nginx/error.log warn;
events { worker_connections 8192; }
http {
  access_log off;
  keepalive_requests 1000000;
  client_body_temp_path $WORK/nginx/tmp/body;
  proxy_temp_path $WORK/nginx/tmp/proxy;
  fastcgi_temp_path $WORK/nginx/tmp/fastcgi;
  uwsgi_temp_path $WORK/nginx/tmp/uwsgi;
  scgi_temp_path $WORK/nginx/tmp/scgi;
  $servers
}
EOF
"${SERVER_PIN[@]}" nginx -c "$WORK/nginx/nginx.conf" -p "$WORK/nginx" >"$WORK/nginx.out" 2>"$WORK/nginx.err" &
PIDS+=($!)
for mode in plain logprobs short; do
  wait_port "${PORTS[$mode]}"
  "$RETRACE" import "$WORK/$mode.jsonl" --endpoint completions --out "$WORK/$mode.rtrace" >/dev/null 2>&1
done

cpu_of_process() { awk -v hz="$(getconf CLK_TCK)" '{print ($14 + $15) / hz}' "/proc/$1/stat"; }
row() {  # WHAT C REQUESTS TOKENS WALL_S CPU_S
  awk -v what="$1" -v c="$2" -v n="$3" -v t="$4" -v wall="$5" -v cpu="$6" 'BEGIN {
    printf "%-22s %5d %7d %10.0f %12.0f %6.0f %% %12.0f %14.0f\n", what, c, n, n / wall, t / wall,
           100 * cpu / wall, n / cpu, t / cpu }'
}
printf "%-22s %5s %7s %10s %12s %8s %12s %14s\n" "" connections requests "req/s" "tokens/s" "client" \
  "req/CPU-s" "tokens/CPU-s"

replay_point() {  # MODE C [REPLAY FLAGS...]: one point of the client's roofline
  local mode=$1 c=$2 n=$REQUESTS; shift 2
  (( n < 4 * c )) && n=$((4 * c))
  command_cpu "$WORK/point.json" "${CLIENT_PIN[@]}" "$RETRACE" replay "$WORK/$mode.rtrace" \
    --target "http://127.0.0.1:${PORTS[$mode]}" -c "$c" --threads 1 --requests "$n" --force \
    --out "$WORK/point.rtrace" --json "$@" >/dev/null
  local json; json=$(tail -1 "$WORK/point.json")
  [[ "$(jq -r .completed <<<"$json")" == "$n" ]] || { cat "$WORK/point.json" >&2; echo "not every request completed" >&2; exit 1; }
  local tokens; tokens=$(jq -r .output_tokens <<<"$json")
  [[ $mode == short ]] && tokens=0
  # The client's own measurement of its measured phase (replay/client_usage.hpp): start-up,
  # the preflight and closing the trace left out.
  row "replay $mode" "$c" "$n" "$tokens" "$(jq -r .client.wall_s <<<"$json")" "$(jq -r .client.cpu_s <<<"$json")"
}

for c in $CONNECTIONS; do replay_point plain "$c" --token-ids off; done
for c in $CONNECTIONS; do replay_point logprobs "$c" --token-ids off; done
for c in $CONNECTIONS; do replay_point short "$c" --token-ids off --no-stream; done

# record as a proxy: replay drives it (on nginx's core, so that record has its core alone); the
# figure is record's own CPU, read from /proc around each point.
for mode in plain short; do
  "${CLIENT_PIN[@]}" "$RETRACE" record --upstream "http://127.0.0.1:${PORTS[$mode]}" --listen 127.0.0.1:0 \
    --out "$WORK/record-$mode.rtrace" --force >"$WORK/record-$mode.out" 2>"$WORK/record-$mode.err" &
  record_pid=$!
  PIDS+=("$record_pid")
  record_url=$(url_of "record-$mode")
  for c in $CONNECTIONS; do
    n=$REQUESTS; (( n < 4 * c )) && n=$((4 * c))
    before=$(cpu_of_process "$record_pid")
    flags=(--token-ids off); [[ $mode == short ]] && flags+=(--no-stream)
    "${SERVER_PIN[@]}" "$RETRACE" replay "$WORK/$mode.rtrace" --target "$record_url" -c "$c" --requests "$n" \
      --force --out "$WORK/through.rtrace" --json "${flags[@]}" >"$WORK/through.json" 2>&1
    after=$(cpu_of_process "$record_pid")
    json=$(tail -1 "$WORK/through.json")
    [[ "$(jq -r .completed <<<"$json")" == "$n" ]] || { cat "$WORK/through.json" >&2; exit 1; }
    tokens=$(jq -r .output_tokens <<<"$json"); [[ $mode == short ]] && tokens=0
    row "record $mode" "$c" "$n" "$tokens" "$(jq -r .duration_s <<<"$json")" \
      "$(awk -v a="$after" -v b="$before" 'BEGIN {print a - b}')"
  done
  kill "$record_pid"; wait "$record_pid" 2>/dev/null || true
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
