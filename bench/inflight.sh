#!/usr/bin/env bash
# Memory and CPU per streamed token in flight (issue 28 item 5, issue 33): C streams of TOKENS
# tokens each (default 16,000), all in flight at once, answered by `retrace serve --latency-model
# off`, replayed at -c C with `--token-ids off` and `auto` (the default: the simulator gives ids),
# directly and with `retrace record` in front. For each: the replay's peak RSS (GNU time) and the
# proxy's (VmHWM), minus their fixed cost (a one-request replay's peak; the idle proxy's), minus
# the raw bytes of the C streams' events (which a client that keeps the stream must hold),
# divided by the tokens in flight; and the replay's CPU per token.
#
# Usage: bench/inflight.sh [RETRACE_BINARY] [CONCURRENCY...]   (default 16 64; TOKENS=16000)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
RETRACE=${1:-$ROOT/build/release/retrace}
shift || true
LEVELS=("$@")
[[ ${#LEVELS[@]} -gt 0 ]] || LEVELS=(16 64)
TOKENS=${TOKENS:-16000}
. "$ROOT/bench/lib.sh"
bench_workdir inflight

"$RETRACE" serve --listen 127.0.0.1:0 --latency-model off --max-model-len 65536 \
  >"$WORK/serve.out" 2>"$WORK/serve.err" &
PIDS+=($!)
SIM=$(url_of serve)

requests() {  # FILE COUNT MAX_TOKENS : COUNT streamed chat requests, distinct prompts
  python3 - "$@" <<'PY'
import json, sys
out, count, max_tokens = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
with open(out, "w") as f:
    for i in range(count):
        body = {"model": "retrace-sim", "messages": [{"role": "user", "content": "think about problem %d" % i}],
                "max_tokens": max_tokens, "ignore_eos": True, "temperature": 0, "stream": True}
        f.write(json.dumps({"request": body}) + "\n")
PY
}

sizes() {  # TRACE : "RAW_BYTES TOKENS": every stored response event's bytes, every choice's tokens
  "$RETRACE" export "$1" | python3 -c '
import json, sys
raw = tokens = 0
for line in sys.stdin:
    exchange = json.loads(line).get("exchange")
    if exchange:
        response = exchange.get("response", {})
        raw += sum(len(e.get("data", "")) for e in response.get("events", [])) + len(response.get("body", ""))
        tokens += sum(len(c.get("tokens", [])) for c in exchange.get("choices", []))
print(raw, tokens)'
}

replay_peak() {  # OUT_PREFIX TARGET ARGS... : "PEAK_KIB CPU_S" of one replay
  local prefix=$1 target=$2
  shift 2
  /usr/bin/time -f '%M %U %S' -o "$prefix.time" "$RETRACE" replay "$WORK/in.rtrace" --target "$target" \
    --out "$prefix.rtrace" --force "$@" >"$prefix.txt" 2>"$prefix.err" || {
    cat "$prefix.err" >&2; exit 1; }
  awk '{printf "%d %.3f\n", $1, $2 + $3}' "$prefix.time"
}

requests "$WORK/one.jsonl" 1 16
"$RETRACE" import "$WORK/one.jsonl" --out "$WORK/one.rtrace" --force 2>/dev/null
/usr/bin/time -f '%M' -o "$WORK/base.time" \
  "$RETRACE" replay "$WORK/one.rtrace" --target "$SIM" --out "$WORK/base.rtrace" --force -c 1 >/dev/null
BASE=$(cat "$WORK/base.time")

echo "retrace: $RETRACE; $(nproc) cores; load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "fixed cost (a one-request replay's peak RSS): $((BASE / 1024)) MiB; $TOKENS tokens a stream"
echo
echo "| -c | --token-ids | path | peak RSS (MiB) | raw event bytes (MiB) | bytes/token in flight beyond raw | replay CPU µs/token |"
echo "|---:|---|---|---:|---:|---:|---:|"
for c in "${LEVELS[@]}"; do
  requests "$WORK/in.jsonl" "$c" "$TOKENS"
  "$RETRACE" import "$WORK/in.jsonl" --out "$WORK/in.rtrace" --force 2>/dev/null
  for ids in off auto; do
    read -r peak cpu < <(replay_peak "$WORK/direct" "$SIM" -c "$c" --token-ids "$ids")
    read -r raw tokens < <(sizes "$WORK/direct.rtrace")
    awk -v c="$c" -v ids="$ids" -v p="$peak" -v b="$BASE" -v r="$raw" -v t="$tokens" -v u="$cpu" 'BEGIN {
      printf "| %d | %s | replay | %.0f | %.1f | %.0f | %.2f |\n", c, ids, p / 1024, r / 1048576,
        (p * 1024 - b * 1024 - r) / t, u * 1e6 / t }'

    "$RETRACE" record --upstream "$SIM" --listen 127.0.0.1:0 --out "$WORK/recorded.rtrace" --force \
      >"$WORK/record.out" 2>"$WORK/record.err" &
    proxy_pid=$!
    PIDS+=("$proxy_pid")
    proxy=$(url_of record)
    idle=$(awk '/VmHWM/ {print $2}' "/proc/$proxy_pid/status")  # the proxy's own fixed cost
    read -r rpeak rcpu < <(replay_peak "$WORK/proxied" "$proxy" -c "$c" --token-ids "$ids")
    hwm=$(awk '/VmHWM/ {print $2}' "/proc/$proxy_pid/status")
    kill -INT "$proxy_pid"
    wait "$proxy_pid" || true
    rm -f "$WORK/record.out"
    read -r raw tokens < <(sizes "$WORK/proxied.rtrace")
    awk -v c="$c" -v ids="$ids" -v p="$rpeak" -v h="$hwm" -v i="$idle" -v b="$BASE" -v r="$raw" -v t="$tokens" -v u="$rcpu" 'BEGIN {
      printf "| %d | %s | replay through record | %.0f | %.1f | %.0f | %.2f |\n", c, ids, p / 1024,
        r / 1048576, (p * 1024 - b * 1024 - r) / t, u * 1e6 / t
      printf "| %d | %s | record (the proxy) | %.0f | %.1f | %.0f | |\n", c, ids, h / 1024,
        r / 1048576, (h * 1024 - i * 1024 - r) / t }'
  done
done
